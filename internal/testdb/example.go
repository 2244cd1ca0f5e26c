package testdb

import (
	"fmt"
	"testing"
)

// ExampleDSN is DSN for runnable examples, which get no testing.TB: a fresh,
// migrated schema on the tests' server (the same throwaway server, or
// TEST_DATABASE_URL). With no server it panics with the reason — an example
// cannot skip, and under CI=true a missing server must fail anyway.
func ExampleDSN() string {
	return DSN(exampleTB{})
}

// ExampleEmptyDSN is EmptyDSN for runnable examples: a fresh schema without
// the lock tables, for an example that migrates it.
func ExampleEmptyDSN() string {
	return EmptyDSN(exampleTB{})
}

// exampleTB is the part of testing.TB that DSN uses, turning a failure or a
// skip into a panic. The embedded interface is nil: DSN calls nothing else.
type exampleTB struct{ testing.TB }

func (exampleTB) Helper() {}

func (exampleTB) Fatal(args ...any) { panic("testdb: " + fmt.Sprint(args...)) }

func (exampleTB) Fatalf(format string, args ...any) { panic("testdb: " + fmt.Sprintf(format, args...)) }

func (exampleTB) Skip(args ...any) {
	panic("testdb: examples need PostgreSQL: " + fmt.Sprint(args...))
}

func (exampleTB) Skipf(format string, args ...any) {
	panic("testdb: examples need PostgreSQL: " + fmt.Sprintf(format, args...))
}
