package store

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/lockctl/lockctl/internal/lockdb"
)

func TestMeaningNamesWhatAnErrorMeans(t *testing.T) {
	cases := []struct {
		err  error
		want error
	}{
		{Interpret(&pgconn.PgError{Code: "42P01"}), lockdb.ErrNotMigrated},
		{Interpret(&pgconn.PgError{Code: "42703"}), lockdb.ErrNotMigrated},
		{Interpret(&pgconn.PgError{Code: "LKA01"}), lockdb.ErrCannotAdopt},
		{Interpret(&pgconn.PgError{Code: "25006"}), lockdb.ErrReadOnly},
		{Interpret(&pgconn.PgError{Code: "42501"}), lockdb.ErrPermissionDenied},
		{fmt.Errorf("locker: renew %q: %w", "k", Interpret(io.ErrUnexpectedEOF)), lockdb.ErrUnavailable},
		{Interpret(&pgconn.PgError{Code: "23505"}), nil}, // unique violation: no meaning of ours
		{errors.New("something else"), nil},
		{nil, nil},
	}
	for _, c := range cases {
		if got, _ := Meaning(c.err); got != c.want {
			t.Errorf("Meaning(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// The cause is the driver's error Interpret wrapped, whatever context a
// caller wrapped around both, so a user reads the meaning and the detail
// without either repeated.
func TestMeaningSeparatesTheCause(t *testing.T) {
	driver := &pgconn.PgError{Code: "42501", Message: "permission denied for function distributed_lock_acquire"}
	err := fmt.Errorf("locker: acquire %q: %w", "k", Interpret(driver))
	meaning, cause := Meaning(err)
	if meaning != lockdb.ErrPermissionDenied || cause != driver {
		t.Fatalf("Meaning(%v) = %v, %v; want ErrPermissionDenied and the driver's error", err, meaning, cause)
	}
	if _, cause := Meaning(fmt.Errorf("%w (it records migration 9)", lockdb.ErrSchemaNewer)); cause != nil {
		t.Fatalf("a meaning wrapped with words has no cause beside it; got %v", cause)
	}
}
