package locker_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/lockctl/lockctl/internal/lockdb"
	"github.com/lockctl/lockctl/internal/testdb"
	"github.com/lockctl/lockctl/locker"
	"github.com/lockctl/lockctl/store"
)

// wantValid is the rule ValidateKey and ValidateOwner implement, stated
// independently: 1..255 bytes of valid UTF-8 without NUL.
func wantValid(s string) bool {
	return len(s) >= 1 && len(s) <= 255 && utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}

func fuzzSeeds(f *testing.F) {
	for _, s := range []string{
		"", "a", "billing:nightly", strings.Repeat("x", 255), strings.Repeat("x", 256),
		strings.Repeat("x", 254) + "é", "a\x00b", "a\xffb", "\xed\xa0\x80", "ключ", "🔒", "\x1b[31mred\x1b[0m", "k\n\t",
	} {
		f.Add(s)
	}
}

// fuzzLocker is a Locker and a database for the round trip: a value the
// validator accepts must be stored and read back byte for byte.
func fuzzLocker(f *testing.F) (*locker.Locker, locker.DBTX) {
	lk, err := locker.New(locker.Config{TTL: time.Minute})
	if err != nil {
		f.Fatal(err)
	}
	return lk, testdb.New(f)
}

func FuzzValidateKey(f *testing.F) {
	fuzzSeeds(f)
	lk, db := fuzzLocker(f)
	f.Fuzz(func(t *testing.T, key string) {
		err := lockdb.ValidateKey(key)
		if (err == nil) != wantValid(key) {
			t.Fatalf("ValidateKey(%q) = %v; want valid=%v", key, err, wantValid(key))
		}
		if err != nil {
			if !errors.Is(err, locker.ErrInvalid) {
				t.Fatalf("ValidateKey(%q) = %v; want ErrInvalidKey", key, err)
			}
			return
		}
		ctx := context.Background()
		lease, err := testdb.Try(ctx, lk, db, key, "fuzz")
		if err != nil {
			t.Fatalf("acquire of accepted key %q: %v", key, err)
		}
		defer testdb.One(lk.Release(ctx, db, lease))
		row, found, err := store.Get[lockdb.LockInfo](ctx, db, key)
		if err != nil || !found || row.Key != key || lease.Key != key {
			t.Fatalf("key %q read back as %q (lease %q), found=%v err=%v", key, row.Key, lease.Key, found, err)
		}
	})
}

// wantValidOwner is the owner rule: a valid name that is not the reserved
// word "*", the owner of a shared or semaphore group's own lease.
func wantValidOwner(s string) bool {
	return wantValid(s) && s != "*"
}

func FuzzValidateOwner(f *testing.F) {
	fuzzSeeds(f)
	f.Add("*")
	lk, db := fuzzLocker(f)
	f.Fuzz(func(t *testing.T, owner string) {
		err := lockdb.ValidateOwner(owner)
		if (err == nil) != wantValidOwner(owner) {
			t.Fatalf("ValidateOwner(%q) = %v; want valid=%v", owner, err, wantValidOwner(owner))
		}
		if err != nil {
			if !errors.Is(err, locker.ErrInvalid) {
				t.Fatalf("ValidateOwner(%q) = %v; want ErrInvalidOwner", owner, err)
			}
			return
		}
		ctx := context.Background()
		lease, err := testdb.Try(ctx, lk, db, "fuzz-owner", owner)
		if err != nil {
			t.Fatalf("acquire by accepted owner %q: %v", owner, err)
		}
		row, _, err := store.Get[lockdb.LockInfo](ctx, db, "fuzz-owner")
		if err != nil || row.Owner != owner {
			t.Fatalf("owner %q read back as %q: %v", owner, row.Owner, err)
		}
		if _, err := testdb.One(lk.Release(ctx, db, lease)); err != nil {
			t.Fatalf("release by owner %q: %v", owner, err)
		}
	})
}
