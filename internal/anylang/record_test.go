package anylang

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lockctl/lockctl/internal/history"
)

// wallClock times the operations of both processes on one clock. A
// history's Call and Return of different clients are compared (real-time
// order, steal times), and Go's monotonic clock has no reading another
// process can take, so both sides read the wall clock (CLOCK_REALTIME, which
// the JVM's Instant.now reads too).
type wallClock struct{ base time.Time }

func newWallClock() wallClock { return wallClock{base: time.Now().Round(0)} }

// now is the offset of this instant from the start.
func (c wallClock) now() time.Duration { return time.Now().Round(0).Sub(c.base) }

// at is the offset of an instant given in nanoseconds since the Unix epoch.
func (c wallClock) at(unixNano int64) time.Duration { return time.Unix(0, unixNano).Sub(c.base) }

// javaFields are the columns of a line Contend.java prints per operation.
const javaFields = 14

// parseJavaOps reads the operations Contend.java printed after its "ready"
// line, as history ops on clock.
func parseJavaOps(out []byte, clock wallClock) ([]history.Op, error) {
	var ops []history.Op
	sc := bufio.NewScanner(bytes.NewReader(out))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "ready" {
			continue
		}
		op, err := parseJavaOp(line, clock)
		if err != nil {
			return nil, fmt.Errorf("Java output line %d %q: %w", n, line, err)
		}
		ops = append(ops, op)
	}
	return ops, sc.Err()
}

func parseJavaOp(line string, clock wallClock) (history.Op, error) {
	f := strings.Split(line, "\t")
	if len(f) != javaFields {
		return history.Op{}, fmt.Errorf("%d fields, want %d", len(f), javaFields)
	}
	var n [7]int64 // client, token, expires_at, ttl, writer_seq, call, return
	for i, col := range []int{1, 4, 7, 8, 9, 10, 11} {
		v, err := strconv.ParseInt(f[col], 10, 64)
		if err != nil {
			return history.Op{}, fmt.Errorf("column %d: %w", col+1, err)
		}
		n[i] = v
	}
	kind := history.Kind(f[0])
	switch kind {
	case history.Grant, history.Renew, history.Release, history.Write:
	default:
		return history.Op{}, fmt.Errorf("unknown kind %q", f[0])
	}
	result := history.Result(f[5])
	switch result {
	case history.OK, history.Held, history.NotHeld, history.Failed, history.Unknown:
	default:
		return history.Op{}, fmt.Errorf("unknown result %q", f[5])
	}
	op := history.Op{
		Client: int(n[0]), Kind: kind, Key: f[2], Owner: f[3], Token: n[1], Result: result,
		Outcome: f[6], TTL: time.Duration(n[3]), WriterSeq: n[4],
		Call: clock.at(n[5]), Return: clock.at(n[6]), Err: f[12], Set: f[13],
	}
	if n[2] != 0 {
		op.ExpiresAt = time.Unix(0, n[2])
	}
	if op.Return < op.Call {
		return history.Op{}, fmt.Errorf("returned before it was called")
	}
	return op, nil
}
