package protocol_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
)

// docFunction is a function as docs/protocol.md shows it: its signature
// (anywhere on the page) and, for a function in one of the page's tables,
// what it returns and its outcomes.
type docFunction struct {
	args    string // as written between the parentheses
	inTable bool   // a row of a table with a returns column
	// outcomesTable: the table lists outcomes (the protocol's own tables,
	// not the internal functions').
	outcomesTable bool
	columns       []string // the result columns a table names
	returns       string   // otherwise: the result as written (a type, or words)
	outcomes      []string // the backquoted words of the outcomes cell
}

var (
	docOnce sync.Once
	docText string
	docErr  error
)

func protocolDoc(t *testing.T) string {
	t.Helper()
	docOnce.Do(func() {
		b, err := os.ReadFile(filepath.Join("..", "..", "docs", "protocol.md"))
		docText, docErr = string(b), err
	})
	if docErr != nil {
		t.Fatal(docErr)
	}
	return docText
}

var (
	signatureRE = regexp.MustCompile("`(distributed_lock_[a-z_]+)\\(([^`]*)\\)`")
	tableRowRE  = regexp.MustCompile("^\\| `(distributed_lock_[a-z_]+)\\(([^`]*)\\)` \\|(.*)\\|(.*)\\|$")
	quotedRE    = regexp.MustCompile("`([^`]+)`")
	wordRE      = regexp.MustCompile(`^[a-z_]+$`)
	errorRowRE  = regexp.MustCompile("(?m)^\\| (`\\d[0-9A-Z]{4}`(?:, `\\d[0-9A-Z]{4}`)*) \\|")
)

// docFunctions parses the page. A row of a table whose header has an
// "outcomes" column lists outcomes; a row whose result is "same" (or "same
// columns") returns what the row above it does.
func docFunctions(t *testing.T) map[string]docFunction {
	t.Helper()
	page := protocolDoc(t)
	fns := map[string]docFunction{}
	for _, m := range signatureRE.FindAllStringSubmatch(page, -1) {
		if _, seen := fns[m[1]]; !seen {
			fns[m[1]] = docFunction{args: m[2]}
		}
	}
	var above []string
	outcomesTable := false
	for _, line := range strings.Split(page, "\n") {
		if strings.HasPrefix(line, "| function |") {
			outcomesTable = strings.Contains(line, "| outcomes |")
			continue
		}
		m := tableRowRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		name, returns, outcomes := m[1], strings.TrimSpace(m[3]), m[4]
		d := docFunction{args: m[2], inTable: true}
		quoted := quotedRE.FindAllStringSubmatch(returns, -1)
		switch {
		case strings.HasPrefix(returns, "same"):
			d.columns = above
		case len(quoted) == 1 && strings.Contains(quoted[0][1], ","):
			for _, c := range strings.Split(quoted[0][1], ",") {
				d.columns = append(d.columns, strings.TrimSpace(c))
			}
		default:
			d.returns = returns
		}
		above = d.columns
		d.outcomesTable = outcomesTable
		if !outcomesTable {
			fns[name] = d
			continue
		}
		for _, q := range quotedRE.FindAllStringSubmatchIndex(outcomes, -1) {
			word := outcomes[q[2]:q[3]]
			// A column the cell gives as an outcome, explained in
			// parentheses, is one too: bind's not_held column names the
			// key of its not_held outcome.
			column := slices.Contains(d.columns, word) && !strings.HasPrefix(outcomes[q[1]:], " (")
			if wordRE.MatchString(word) && !strings.HasPrefix(word, "distributed_lock") &&
				!column && !slices.Contains(argNames(d.args), word) &&
				!slices.Contains(d.outcomes, word) {
				d.outcomes = append(d.outcomes, word)
			}
		}
		fns[name] = d
	}
	return fns
}

func argNames(args string) []string {
	var names []string
	for _, a := range splitArgs(args) {
		names = append(names, strings.Fields(a)[0])
	}
	return names
}

func splitArgs(args string) []string {
	if strings.TrimSpace(args) == "" {
		return nil
	}
	parts := strings.Split(args, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// documentedOutcomes is fn's outcomes as its table row lists them.
func documentedOutcomes(t *testing.T, fn string) []string {
	t.Helper()
	return docFunctions(t)[fn].outcomes
}

// documentedErrors is the SQLSTATEs of the page's Errors table.
func documentedErrors(t *testing.T) []string {
	t.Helper()
	var codes []string
	for _, m := range errorRowRE.FindAllStringSubmatch(protocolDoc(t), -1) {
		for _, q := range quotedRE.FindAllStringSubmatch(m[1], -1) {
			codes = append(codes, q[1])
		}
	}
	return codes
}

// dbFunction is a function as the migrated schema has it.
type dbFunction struct {
	Name      string `db:"name"`
	Arguments string `db:"arguments"`
	Result    string `db:"result"`
	// RowColumns is the columns of the row type the function returns when
	// that is a type made for it (CREATE TYPE), not a table's row; else NULL.
	RowColumns []string `db:"row_columns"`
}

// The schema's functions, but for the event log's trigger function.
const schemaFunctionsSQL = `
SELECT p.proname AS name, pg_get_function_arguments(p.oid) AS arguments,
       pg_get_function_result(p.oid) AS result,
       (SELECT array_agg(a.attname::text ORDER BY a.attnum)
        FROM pg_type t JOIN pg_class c ON c.oid = t.typrelid AND c.relkind = 'c'
        JOIN pg_attribute a ON a.attrelid = t.typrelid
        WHERE t.oid = p.prorettype AND NOT p.proretset AND a.attnum > 0 AND NOT a.attisdropped
       ) AS row_columns
FROM pg_proc p
WHERE p.pronamespace = current_schema()::regnamespace AND p.proname LIKE 'distributed\_lock\_%'
  AND p.prorettype <> 'trigger'::regtype
ORDER BY 1`

// castRE matches the cast PostgreSQL adds to a default (DEFAULT NULL::jsonb),
// which the page leaves out.
var castRE = regexp.MustCompile(`(DEFAULT [^,:]+)::[a-z_ ]+(\[\])?`)

// TestProtocolDocMatchesFunctions: every function of the migrated schema is
// on docs/protocol.md with its arguments (names, types, defaults) as the
// schema declares them, every function on the page exists, a table row's
// result columns are the function's, and every function has a table test
// of its own here (fn_<name>_test.go). Outcomes are checked by those
// tests: each case's outcome must be documented, and each documented
// outcome reached by a case.
func TestProtocolDocMatchesFunctions(t *testing.T) {
	t.Parallel()
	db := sharedPool(t)
	rows, _ := db.Query(context.Background(), schemaFunctionsSQL)
	fns, err := pgx.CollectRows(rows, pgx.RowToStructByName[dbFunction])
	if err != nil {
		t.Fatal(err)
	}
	docs := docFunctions(t)
	for _, fn := range fns {
		d, ok := docs[fn.Name]
		if !ok {
			t.Errorf("%s is not on docs/protocol.md", fn.Name)
			continue
		}
		delete(docs, fn.Name)
		var in, out []string
		for _, a := range splitArgs(castRE.ReplaceAllString(fn.Arguments, "$1")) {
			if name, isOut := strings.CutPrefix(a, "OUT "); isOut {
				out = append(out, strings.Fields(name)[0])
			} else {
				in = append(in, a)
			}
		}
		if got := strings.ReplaceAll(strings.Join(in, ", "), "timestamp with time zone", "timestamptz"); got != d.args {
			t.Errorf("%s: the page shows (%s); the schema has (%s)", fn.Name, d.args, got)
		}
		if cols, isTable := strings.CutPrefix(fn.Result, "TABLE("); isTable {
			out = argNames(strings.TrimSuffix(cols, ")"))
		}
		if fn.RowColumns != nil {
			out = fn.RowColumns
		}
		if d.inTable {
			checkResult(t, fn, d, out)
		}
		if _, err := os.Stat(testFile(fn.Name)); err != nil {
			t.Errorf("%s has no table test: %v", fn.Name, err)
		} else if src, _ := os.ReadFile(testFile(fn.Name)); !strings.Contains(string(src), `Fixture(t, "`+fn.Name+`")`) {
			t.Errorf("%s does not set up a fixture for %s", testFile(fn.Name), fn.Name)
		}
	}
	for name := range docs {
		t.Errorf("docs/protocol.md shows %s, which the schema does not have", name)
	}
}

func testFile(fn string) string {
	return "fn_" + strings.TrimPrefix(fn, "distributed_lock_") + "_test.go"
}

// checkResult compares a table row's result with the function's: the
// columns it names, the type it quotes, none (void), or, in words on the
// protocol's tables, a number (an id: bigint).
func checkResult(t *testing.T, fn dbFunction, d docFunction, columns []string) {
	t.Helper()
	quoted := quotedRE.FindStringSubmatch(d.returns)
	switch {
	case d.columns != nil:
		if !slices.Equal(d.columns, columns) {
			t.Errorf("%s: the page lists the columns %v; the function returns %v", fn.Name, d.columns, columns)
		}
	case quoted != nil:
		want := quoted[1]
		if strings.HasPrefix(d.returns, "set of") {
			want = "SETOF " + want
		}
		if fn.Result != want {
			t.Errorf("%s: the page says it returns %s; the function returns %s", fn.Name, d.returns, fn.Result)
		}
	case d.returns == "":
		if fn.Result != "void" {
			t.Errorf("%s: the page shows no result; the function returns %s", fn.Name, fn.Result)
		}
	case d.outcomesTable && fn.Result != "bigint":
		t.Errorf("%s: the page says it returns %q, a number; the function returns %s", fn.Name, d.returns, fn.Result)
	}
}
