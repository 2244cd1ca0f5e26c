package testdb

import (
	"testing"

	"github.com/lockctl/lockctl/internal/operator"
)

// Operator makes an operator acting as actor, or fails the test.
func Operator(t testing.TB, actor string) operator.Operator {
	t.Helper()
	op, err := operator.New(actor)
	if err != nil {
		t.Fatal(err)
	}
	return op
}
