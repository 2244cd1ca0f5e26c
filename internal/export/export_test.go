package export

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

type Inner struct {
	Key  string        `db:"lock_key"`
	TTL  time.Duration `db:"ttl"`
	note string
}

type holder struct {
	Owner string        `db:"owner_id"`
	Left  time.Duration `db:"remaining"`
}

type row struct {
	Inner
	At       time.Time      `db:"at"`
	Released *time.Time     `db:"released_at"`
	Token    *int64         `json:"token"`
	Hidden   string         `db:"-"`
	Untagged string         // no tag: not a column
	Detail   map[string]any `db:"detail"`
	Holders  []holder       `db:"holders"`
	Live     bool           `json:"live"`
}

// A row's columns are its fields as the database names them, embedded
// structs in place; a duration is a _ms column.
func TestColumnsFollowTheStructsTags(t *testing.T) {
	got := Columns(row{})
	want := []string{"lock_key", "ttl_ms", "at", "released_at", "token", "detail", "holders", "live"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Columns = %q; want %q", got, want)
	}
	if got := Columns(&row{}); !reflect.DeepEqual(got, want) {
		t.Fatalf("Columns of a pointer = %q; want %q", got, want)
	}
}

func TestValuesAreWrittenOneWay(t *testing.T) {
	at := time.Date(2026, 12, 2, 17, 0, 0, 123456000, time.FixedZone("CET", 3600))
	r := row{Inner: Inner{Key: "k", TTL: 1500 * time.Millisecond}, At: at,
		Detail:  map[string]any{"slot": float64(2), "when": at},
		Holders: []holder{{Owner: "a", Left: 2 * time.Second}}, Live: true}
	got := Values(r)
	want := []any{"k", int64(1500), "2026-12-02T16:00:00.123456Z", nil, nil,
		json.RawMessage(`{"slot":2,"when":"2026-12-02T16:00:00.123456Z"}`),
		json.RawMessage(`[{"owner_id":"a","remaining_ms":2000}]`), true}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Values =\n%#v\nwant\n%#v", got, want)
	}
}

func writeTable(t *testing.T, f Format, columns []string, rows ...[]any) string {
	t.Helper()
	var buf bytes.Buffer
	w := New(f, &buf, columns)
	for _, r := range rows {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// Text a spreadsheet would run as a formula gets a leading '; any other
// text, however awkward for CSV, reads back exactly; numbers are never
// touched.
func TestCSVGuardsFormulasAndKeepsOtherTextExactly(t *testing.T) {
	cells := map[string]string{
		"=HYPERLINK(\"http://x\")": "'=HYPERLINK(\"http://x\")",
		"+1":                       "'+1",
		"-2+3":                     "'-2+3",
		"@SUM(A1)":                 "'@SUM(A1)",
		"\tcmd":                    "'\tcmd",
		"\rcmd":                    "'\rcmd",
		"a,b \"quoted\"\nline":     "a,b \"quoted\"\nline",
		"evil\x1b]2;x\x07":         "evil\x1b]2;x\x07",
		"'already":                 "'already",
		"":                         "",
		"billing:nightly":          "billing:nightly",
	}
	var rows [][]any
	var want []string
	for in, out := range cells {
		rows = append(rows, []any{in, int64(-95000), nil, true, json.RawMessage(`{"a":"=1"}`)})
		want = append(want, out)
	}
	out := writeTable(t, CSV, []string{"text", "remaining_ms", "released_at", "live", "detail"}, rows...)
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatalf("the CSV does not parse: %v\n%s", err, out)
	}
	if got := strings.Join(recs[0], ","); got != "text,remaining_ms,released_at,live,detail" {
		t.Fatalf("header %q", got)
	}
	for i, rec := range recs[1:] {
		if rec[0] != want[i] {
			t.Errorf("cell %q written as %q; want %q", rows[i][0], rec[0], want[i])
		}
		if rec[1] != "-95000" || rec[2] != "" || rec[3] != "true" || rec[4] != `{"a":"=1"}` {
			t.Errorf("row %d: %q", i, rec)
		}
	}
}

func TestCSVEscapeRewritesEveryCell(t *testing.T) {
	var buf bytes.Buffer
	w := NewCSV(&buf, []string{"k"}, func(s string) string { return strings.ReplaceAll(s, "\x1b", `\x1b`) })
	if err := w.Write([]any{"evil\x1b[2J"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); got != "k\nevil\\x1b[2J\n" {
		t.Fatalf("got %q", got)
	}
}

func TestEmptyTables(t *testing.T) {
	if got := writeTable(t, CSV, []string{"a", "b"}); got != "a,b\n" {
		t.Errorf("empty CSV = %q; want its header", got)
	}
	if got := writeTable(t, JSON, []string{"a", "b"}); got != "[]\n" {
		t.Errorf("empty JSON = %q; want []", got)
	}
}

// JSON is an array of objects, members in column order, text exact (no
// formula guard: JSON is no spreadsheet's input), nested values as JSON.
func TestJSONIsAnArrayOfObjectsInColumnOrder(t *testing.T) {
	out := writeTable(t, JSON, []string{"z", "a", "detail", "n"},
		[]any{"=1", nil, json.RawMessage(`{"k":[1,2]}`), int64(7)},
		[]any{"<&>", true, nil, int64(-1)})
	want := "[\n{\"z\":\"=1\",\"a\":null,\"detail\":{\"k\":[1,2]},\"n\":7},\n{\"z\":\"<&>\",\"a\":true,\"detail\":null,\"n\":-1}\n]\n"
	if out != want {
		t.Fatalf("got\n%s\nwant\n%s", out, want)
	}
	var decoded []map[string]any
	if err := json.Unmarshal([]byte(out), &decoded); err != nil || len(decoded) != 2 {
		t.Fatalf("does not decode: %v", err)
	}
}

func TestFormatOf(t *testing.T) {
	for path, want := range map[string]Format{"locks.csv": CSV, "/tmp/x.JSON": JSON, "a.b.Csv": CSV} {
		if got, err := FormatOf(path); err != nil || got != want {
			t.Errorf("FormatOf(%q) = %q, %v; want %q", path, got, err, want)
		}
	}
	for _, path := range []string{"locks", "locks.txt", "dir.csv/"} {
		if _, err := FormatOf(path); err == nil {
			t.Errorf("FormatOf(%q) took it", path)
		}
	}
}
