package store_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// timeReadRE matches a read of the time in SQL: a call of the functions
// that give it, the SQL keywords that do, and the 'now' literal.
var timeReadRE = regexp.MustCompile(`(?i)\b(clock_timestamp|statement_timestamp|transaction_timestamp|timeofday|now)\s*\(|` +
	`\b(current_timestamp|current_time|current_date|localtimestamp|localtime)\b|'now'`)

// clockReadsAllowed are the only lines of store/sql that read the time
// other than through distributed_lock_now, each for its reason.
var clockReadsAllowed = map[string]string{
	// The protocol's clock itself.
	"functions/02_rules.sql: SELECT pg_catalog.clock_timestamp()": "the clock",
	// When a migration ran: written before the functions exist, and not
	// lock time.
	"migrations/001_initial_schema.sql: applied_at timestamptz NOT NULL DEFAULT now()": "migration history",
	// The adoption runs inside migration 1, before the functions exist.
	"adopt/2_copy_in.sql: adopted timestamptz := clock_timestamp();": "adoption",
}

// TestOneClock: the protocol reads the time in one place,
// distributed_lock_now(). No function, rule, column default, guard or
// adoption reads it otherwise (comments aside), but for the few lines
// clockReadsAllowed names.
func TestOneClock(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	err := filepath.WalkDir("sql", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".sql") {
			return err
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(strings.TrimPrefix(path, "sql"+string(filepath.Separator)))
		for n, line := range strings.Split(string(text), "\n") {
			code, _, _ := strings.Cut(line, "--")
			if !timeReadRE.MatchString(code) {
				continue
			}
			at := name + ": " + strings.TrimSpace(code)
			if clockReadsAllowed[at] == "" {
				t.Errorf("%s:%d reads the time other than through distributed_lock_now(): %s", name, n+1,
					strings.TrimSpace(code))
			}
			seen[at] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for at := range clockReadsAllowed {
		if !seen[at] {
			t.Errorf("the allowed time read %q is gone: take it off clockReadsAllowed", at)
		}
	}
}
