package store_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// sqlFunction is one CREATE FUNCTION of store/sql/functions: its name, the
// file and line it starts at, its length in lines (from CREATE to the end
// of its body) and the comment lines right above it.
type sqlFunction struct {
	name, file  string
	line, lines int
	comment     []string
	body        string // from CREATE to the end, comments left out
}

var (
	createFunctionRE = regexp.MustCompile(`^CREATE (OR REPLACE )?FUNCTION (\w+)`)
	// A body ends with its closing dollar quote and the statement's end.
	functionEndRE = regexp.MustCompile(`\$\$;\s*$`)
)

// sqlFunctions reads every function of store/sql/functions.
func sqlFunctions(t *testing.T) []sqlFunction {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("sql", "functions", "*.sql"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("function files: %v, %v", paths, err)
	}
	var fns []sqlFunction
	for _, path := range paths {
		text, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(text), "\n")
		for i := 0; i < len(lines); i++ {
			m := createFunctionRE.FindStringSubmatch(lines[i])
			if m == nil {
				continue
			}
			fn := sqlFunction{name: m[2], file: filepath.Base(path), line: i + 1}
			for k := i - 1; k >= 0 && strings.HasPrefix(lines[k], "--"); k-- {
				fn.comment = append([]string{lines[k]}, fn.comment...)
			}
			end := i
			for end < len(lines) && !functionEndRE.MatchString(lines[end]) {
				end++
			}
			fn.lines = end - i + 1
			for _, line := range lines[i:min(end+1, len(lines))] {
				code, _, _ := strings.Cut(line, "--")
				fn.body += code + "\n"
			}
			fns = append(fns, fn)
			i = end
		}
	}
	return fns
}

// maxFunctionLines bounds a function: one that needs more does more than
// one thing.
const maxFunctionLines = 60

// TestFunctionsAreShortAndSayWhatTheyDecide: every function of the
// protocol begins with a comment whose first line names it and says what
// it decides, and none is over maxFunctionLines lines.
func TestFunctionsAreShortAndSayWhatTheyDecide(t *testing.T) {
	t.Parallel()
	for _, fn := range sqlFunctions(t) {
		if len(fn.comment) == 0 || !regexp.MustCompile(`^-- `+fn.name+`\b[,:]? ?\S`).MatchString(fn.comment[0]) {
			t.Errorf("%s:%d: %s does not begin with a comment line \"-- %s: what it decides\"",
				fn.file, fn.line, fn.name, fn.name)
		}
		if fn.lines > maxFunctionLines {
			t.Errorf("%s:%d: %s is %d lines; at most %d", fn.file, fn.line, fn.name, fn.lines, maxFunctionLines)
		}
	}
}

// modeLiteralRE matches a lock mode written as a literal, and
// qualifiedModeRE a lock_mode column of a row (l.lock_mode) compared.
var (
	modeCompareRE   = regexp.MustCompile(`(\S+)\s*(=|<>|!=)\s*'(exclusive|shared|semaphore)'|\bIN\s*\(\s*'(exclusive|shared|semaphore)'`)
	qualifiedModeRE = regexp.MustCompile(`\b\w+\.lock_mode\s*(=|<>|!=|<|>|\bIN\b|\bIS\b)`)
)

// modeRules is the file of the rules, the one place a lease's or a
// waiter's mode is compared (distributed_lock_is_group, of_kind,
// holder_mode, waits_for_group, asks_for, group_of).
const modeRules = "02_rules.sql"

// TestModesAreComparedOnlyInTheRules: outside the rules, no function
// compares a row's lock_mode or tests a mode against a literal; a mode
// literal appears only as the value a grant writes (SET lock_mode =
// 'exclusive'). Comments aside.
func TestModesAreComparedOnlyInTheRules(t *testing.T) {
	t.Parallel()
	paths, err := filepath.Glob(filepath.Join("sql", "functions", "*.sql"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range paths {
		if filepath.Base(path) == modeRules {
			continue
		}
		text, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for n, line := range strings.Split(string(text), "\n") {
			code, _, _ := strings.Cut(line, "--")
			bad := qualifiedModeRE.MatchString(code)
			for _, m := range modeCompareRE.FindAllStringSubmatch(code, -1) {
				if m[1] != "lock_mode" { // lock_mode = '…' unqualified: a SET's write
					bad = true
				}
			}
			if bad {
				t.Errorf("%s:%d compares a lock mode outside the rules (%s): %s",
					filepath.Base(path), n+1, modeRules, strings.TrimSpace(code))
			}
		}
	}
}

var (
	// leaseUpdateRE matches an UPDATE of the lease table up to its WHERE,
	// and setColumnRE a column its SET assigns.
	leaseUpdateRE = regexp.MustCompile(`(?s)UPDATE distributed_lock \w+ (SET\b.*?)\bWHERE\b`)
	setColumnRE   = regexp.MustCompile(`(?:\bSET|,)\s*(\w+)\s*=[^>]`)
	leaseInsertRE = regexp.MustCompile(`INSERT INTO distributed_lock\s`)
)

// rowMakers are the functions that insert a lease row: the one insert, and
// the free row a waiting set queues on (no lease).
var rowMakers = []string{"distributed_lock_make_row", "distributed_lock_create_free"}

// grantWriters are the functions that write a new lease (an UPDATE that
// draws a token): the one grant write, and the inline copies of it in
// distributed_lock_acquire and distributed_lock_join_group (03_acquire.sql
// and 11_shared.sql say why).
var grantWriters = []string{"distributed_lock_acquire", "distributed_lock_join_group", "distributed_lock_grant_lease"}

// TestOneGrantWrite: a new lease is written by distributed_lock_grant_lease
// only, but for the inline copies (grantWriters), which write exactly its
// columns: a column added to a lease is added to each, or this fails. A lease row is
// inserted by distributed_lock_make_row only.
func TestOneGrantWrite(t *testing.T) {
	t.Parallel()
	columns := map[string][]string{}
	for _, fn := range sqlFunctions(t) {
		if leaseInsertRE.MatchString(fn.body) && !slices.Contains(rowMakers, fn.name) {
			t.Errorf("%s:%d: %s inserts a lease row; only distributed_lock_make_row may", fn.file, fn.line, fn.name)
		}
		for _, m := range leaseUpdateRE.FindAllStringSubmatch(fn.body, -1) {
			var set []string
			for _, c := range setColumnRE.FindAllStringSubmatch(m[1], -1) {
				set = append(set, c[1])
			}
			if !slices.Contains(set, "fence_token") {
				continue
			}
			if !slices.Contains(grantWriters, fn.name) || columns[fn.name] != nil {
				t.Errorf("%s:%d: %s writes a new lease (its token); only distributed_lock_grant_lease may", fn.file, fn.line, fn.name)
			}
			slices.Sort(set)
			columns[fn.name] = set
		}
	}
	want := columns["distributed_lock_grant_lease"]
	if len(want) == 0 {
		t.Fatal("distributed_lock_grant_lease writes no lease")
	}
	for _, copy := range grantWriters {
		if got := columns[copy]; !slices.Equal(got, want) {
			t.Errorf("%s's grant writes %v; distributed_lock_grant_lease writes %v", copy, got, want)
		}
	}
}
