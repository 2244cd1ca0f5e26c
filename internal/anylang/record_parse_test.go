package anylang

import (
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/history"
)

func TestParseJavaOps(t *testing.T) {
	clock := wallClock{base: time.Unix(1_700_000_000, 0)}
	base := clock.base.UnixNano()
	out := strings.Join([]string{
		"ready",
		"grant\t100\tk1\tjava-0\t7\tok\tstolen\t1700000000900000000\t200000000\t0\t1700000000000001000\t1700000000000002500\t\t",
		"write\t100\tk1\tjava-0\t7\tnot_held\t\t0\t0\t3\t1700000000000003000\t1700000000000004000\t\t",
		"release\t101\tk2\tjava-1\t9\tunknown\t\t0\t0\t0\t1700000000000005000\t1700000000000006000\torg.postgresql.util.PSQLException: An I/O error occurred\t",
		"grant\t102\tk3\tjava-2-set1\t11\tok\tacquired\t1700000000900000000\t200000000\t0\t1700000000000007000\t1700000000000008000\t\tjava-2-set1",
	}, "\n") + "\n"
	ops, err := parseJavaOps([]byte(out), clock)
	if err != nil {
		t.Fatal(err)
	}
	want := []history.Op{
		{Client: 100, Kind: history.Grant, Key: "k1", Owner: "java-0", Token: 7, Result: history.OK, Outcome: "stolen",
			ExpiresAt: time.Unix(0, base+900_000_000), TTL: 200 * time.Millisecond,
			Call: 1000 * time.Nanosecond, Return: 2500 * time.Nanosecond},
		{Client: 100, Kind: history.Write, Key: "k1", Owner: "java-0", Token: 7, Result: history.NotHeld, WriterSeq: 3,
			Call: 3 * time.Microsecond, Return: 4 * time.Microsecond},
		{Client: 101, Kind: history.Release, Key: "k2", Owner: "java-1", Token: 9, Result: history.Unknown,
			Call: 5 * time.Microsecond, Return: 6 * time.Microsecond, Err: "org.postgresql.util.PSQLException: An I/O error occurred"},
		{Client: 102, Kind: history.Grant, Key: "k3", Owner: "java-2-set1", Token: 11, Result: history.OK, Outcome: "acquired",
			ExpiresAt: time.Unix(0, base+900_000_000), TTL: 200 * time.Millisecond, Set: "java-2-set1",
			Call: 7 * time.Microsecond, Return: 8 * time.Microsecond},
	}
	if len(ops) != len(want) {
		t.Fatalf("parsed %d ops, want %d: %+v", len(ops), len(want), ops)
	}
	for i := range want {
		if !ops[i].ExpiresAt.Equal(want[i].ExpiresAt) {
			t.Errorf("op %d expires at %s, want %s", i, ops[i].ExpiresAt, want[i].ExpiresAt)
		}
		ops[i].ExpiresAt, want[i].ExpiresAt = time.Time{}, time.Time{}
		if ops[i] != want[i] {
			t.Errorf("op %d = %+v\nwant %+v", i, ops[i], want[i])
		}
	}
}

func TestParseJavaOpsRefusesWhatItCannotRead(t *testing.T) {
	clock := newWallClock()
	for name, line := range map[string]string{
		"too few fields":     "grant\t100\tk1",
		"token not a number": "grant\t100\tk1\tjava-0\tseven\tok\tacquired\t0\t0\t0\t1\t2\t\t",
		"unknown kind":       "steal\t100\tk1\tjava-0\t7\tok\tacquired\t0\t0\t0\t1\t2\t\t",
		"unknown result":     "grant\t100\tk1\tjava-0\t7\tmaybe\tacquired\t0\t0\t0\t1\t2\t\t",
		"time backwards":     "grant\t100\tk1\tjava-0\t7\tok\tacquired\t0\t0\t0\t5\t2\t\t",
	} {
		if _, err := parseJavaOps([]byte(line+"\n"), clock); err == nil || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("%s: parse error = %v, want one naming the line", name, err)
		}
	}
}
