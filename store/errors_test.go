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
		if got := Meaning(c.err); got != c.want {
			t.Errorf("Meaning(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
