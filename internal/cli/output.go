package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/lockctl/lockctl/internal/textsafe"
)

// writeJSON writes v as one line of JSON. Beyond what encoding/json
// escapes, every rune textsafe keeps from a terminal is written as a \u
// escape too, so the output is safe to show on a terminal as well as to
// parse.
func writeJSON(w io.Writer, v any) error {
	b, err := encodeJSON(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// encodeJSON is v as writeJSON writes it, without the newline.
func encodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return escapeUnsafeRunes(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))), nil
}

// jsonArray writes one JSON array an element at a time, so an array of any
// length is never held in memory. Its bytes are writeJSON's for the whole
// slice: elements encode the same inside an array as alone, and the
// array's line is ended by close. Nothing is written before the first
// element or close.
type jsonArray struct {
	w io.Writer
	n int
}

func newJSONArray(w io.Writer) *jsonArray { return &jsonArray{w: w} }

func (a *jsonArray) add(v any) error {
	b, err := encodeJSON(v)
	if err != nil {
		return err
	}
	sep := ","
	if a.n == 0 {
		sep = "["
	}
	a.n++
	if _, err := io.WriteString(a.w, sep); err != nil {
		return err
	}
	_, err = a.w.Write(b)
	return err
}

func (a *jsonArray) close() error {
	end := "]\n"
	if a.n == 0 {
		end = "[]\n"
	}
	_, err := io.WriteString(a.w, end)
	return err
}

// writeTable writes rows under header as columns two spaces apart, or the
// line empty when there are no rows. Cells are written as given: escaping
// database text is the caller's job.
func writeTable(w io.Writer, empty string, header []string, rows [][]string) error {
	t := newTableWriter(w, empty, header)
	for _, row := range rows {
		if err := t.add(row); err != nil {
			return err
		}
	}
	return t.close()
}

// tableWriter is writeTable a row at a time. The columns' widths are known
// only at the end, so the rows' cells are held until close (only the
// cells: callers need not keep what they were made from).
type tableWriter struct {
	w      io.Writer
	tw     *tabwriter.Writer
	empty  string
	header []string
}

func newTableWriter(w io.Writer, empty string, header []string) *tableWriter {
	return &tableWriter{w: w, empty: empty, header: header}
}

func (t *tableWriter) add(row []string) error {
	if t.tw == nil {
		t.tw = tabwriter.NewWriter(t.w, 0, 0, 2, ' ', 0)
		if _, err := fmt.Fprintln(t.tw, strings.Join(t.header, "\t")); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintln(t.tw, strings.Join(row, "\t"))
	return err
}

func (t *tableWriter) close() error {
	if t.tw == nil {
		_, err := fmt.Fprintln(t.w, t.empty)
		return err
	}
	return t.tw.Flush()
}

// escapeUnsafeRunes rewrites the runes textsafe keeps from a terminal as
// JSON \u escapes. Outside strings JSON is ASCII, so every such rune is inside a
// string, where \uXXXX means the same rune.
func escapeUnsafeRunes(b []byte) []byte {
	var out []byte
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r >= 0x80 && textsafe.Unsafe(r) {
			if out == nil {
				out = append(make([]byte, 0, len(b)+16), b[:i]...)
			}
			out = fmt.Appendf(out, `\u%04x`, r)
		} else if out != nil {
			out = append(out, b[i:i+size]...)
		}
		i += size
	}
	if out == nil {
		return b
	}
	return out
}

// formatDuration shows a duration at a precision that suits its size:
// 850ms, 29.5s, 12m5s, 3h12m.
func formatDuration(d time.Duration) string {
	neg := d < 0
	if neg {
		d = -d
	}
	var s string
	switch {
	case d < time.Second:
		s = d.Round(time.Millisecond).String()
	case d < time.Minute:
		s = d.Round(100 * time.Millisecond).String()
	case d < time.Hour:
		s = d.Round(time.Second).String()
	default:
		s = d.Round(time.Minute).String()
	}
	// Drop zero trailing units: "5m0s" is 5m, "1h0m0s" is 1h.
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m0s") || strings.HasSuffix(s, "h0m") {
		s = s[:strings.LastIndexByte(s, 'h')+1]
	}
	if neg {
		return "-" + s
	}
	return s
}

// utc is t in UTC, so JSON times read the same whatever this machine's zone.
func utc(t time.Time) time.Time { return t.UTC() }

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
