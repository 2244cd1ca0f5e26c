package lockview_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lockview"
)

// wait is a live wait of waiter for key, held by holder ("" for nobody),
// waited seconds.
func wait(waiter, key, holder string, waited int) lockview.Wait {
	w := lockview.Wait{Waiter: waiter, Key: key, Waited: time.Duration(waited) * time.Second, WaitingMS: int64(waited) * 1000}
	if holder != "" {
		w.Holders = []string{holder}
	}
	return w
}

// outline draws a forest as indented lines, the way an operator reads it.
func outline(trees []lockview.BlockTree) string {
	var b strings.Builder
	var node func(n lockview.BlockNode, depth int)
	node = func(n lockview.BlockNode, depth int) {
		b.WriteString(strings.Repeat("  ", depth) + n.Owner)
		if n.Wait != nil {
			fmt.Fprintf(&b, " for %s %ds", n.Wait.Key, int(n.Wait.Waited.Seconds()))
		}
		if n.Cycle {
			b.WriteString(" CYCLE")
		}
		if n.Repeat {
			b.WriteString(" REPEAT")
		}
		b.WriteString("\n")
		for _, c := range n.Blocked {
			node(c, depth+1)
		}
	}
	for _, t := range trees {
		fmt.Fprintf(&b, "[%d %v]\n", t.Kind, t.Deadlock)
		node(t.Top, 0)
	}
	return b.String()
}

func TestAnalyzeBlocking(t *testing.T) {
	cases := []struct {
		name      string
		waits     []lockview.Wait
		roots     []string
		deadlocks [][]string
		trees     string
	}{
		{
			name:      "nobody waits",
			roots:     nil,
			deadlocks: [][]string{},
			trees:     "",
		},
		{
			// c waits for b, who waits for a: a is the root of the chain.
			name:      "chain down to the root holder",
			waits:     []lockview.Wait{wait("c", "y", "b", 3), wait("b", "x", "a", 9), wait("d", "x", "a", 1)},
			roots:     []string{"a"},
			deadlocks: [][]string{},
			trees:     "[0 []]\na\n  b for x 9s\n    c for y 3s\n  d for x 1s\n",
		},
		{
			name:      "two roots, longest wait first",
			waits:     []lockview.Wait{wait("b", "x", "a", 2), wait("d", "z", "c", 7)},
			roots:     []string{"a", "c"},
			deadlocks: [][]string{},
			trees:     "[0 []]\nc\n  d for z 7s\n[0 []]\na\n  b for x 2s\n",
		},
		{
			// a holds x and waits for y; b holds y and waits for x.
			name:      "two-owner deadlock",
			waits:     []lockview.Wait{wait("a", "y", "b", 5), wait("b", "x", "a", 4)},
			roots:     nil,
			deadlocks: [][]string{{"a", "b"}},
			trees:     "[1 [a b]]\na\n  b for x 4s\n    a for y 5s CYCLE\n",
		},
		{
			// a → c → b → a, with e waiting behind b from outside the ring.
			name: "three-owner ring read in wait order, with a waiter hanging off it",
			waits: []lockview.Wait{wait("a", "kc", "c", 1), wait("c", "kb", "b", 2), wait("b", "ka", "a", 3),
				wait("e", "kb", "b", 8)},
			roots:     nil,
			deadlocks: [][]string{{"a", "c", "b"}},
			trees:     "[1 [a c b]]\na\n  b for ka 3s\n    e for kb 8s\n    c for kb 2s\n      a for kc 1s CYCLE\n",
		},
		{
			// a's set waits for y, held by b, and has a record on x, which
			// a holds already: that record waits for nobody.
			name:      "a waiting set's record on a key its owner holds is no wait",
			waits:     []lockview.Wait{wait("a", "x", "a", 2), wait("a", "y", "b", 2)},
			roots:     []string{"b"},
			deadlocks: [][]string{},
			trees:     "[0 []]\nb\n  a for y 2s\n",
		},
		{
			name:      "a wait for a key nobody holds has no blocker",
			waits:     []lockview.Wait{wait("b", "free", "", 4), wait("c", "y", "b", 1)},
			roots:     nil,
			deadlocks: [][]string{},
			trees:     "[2 []]\nb for free 4s\n  c for y 1s\n",
		},
		{
			// d waits for two keys, both held by holders under root a: its
			// own waiters are shown once.
			name: "a diamond expands each owner once",
			waits: []lockview.Wait{wait("b", "x", "a", 9), wait("c", "x2", "a", 8),
				wait("d", "y", "b", 5), wait("d", "z", "c", 4), wait("e", "w", "d", 1)},
			roots:     []string{"a"},
			deadlocks: [][]string{},
			trees:     "[0 []]\na\n  b for x 9s\n    d for y 5s\n      e for w 1s\n  c for x2 8s\n    d for z 4s REPEAT\n",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := lockview.AnalyzeBlocking(c.waits)
			if got := b.Roots(); !reflect.DeepEqual(got, c.roots) {
				t.Errorf("roots = %q, want %q", got, c.roots)
			}
			if !reflect.DeepEqual(b.Deadlocks, c.deadlocks) {
				t.Errorf("deadlocks = %q, want %q", b.Deadlocks, c.deadlocks)
			}
			if got := outline(b.Trees()); got != c.trees {
				t.Errorf("trees:\n%s\nwant:\n%s", got, c.trees)
			}
			for i := 1; i < len(b.Waits); i++ {
				if b.Waits[i].Waited > b.Waits[i-1].Waited {
					t.Errorf("waits not longest first: %v", b.Waits)
				}
			}
		})
	}
}

// The JSON is the shape `lockctl blocking --json` prints, with [] (not
// null) for no holders, no waits and no deadlocks.
func TestBlockingJSON(t *testing.T) {
	b := lockview.AnalyzeBlocking([]lockview.Wait{wait("a", "y", "b", 5), wait("b", "x", "a", 4), wait("c", "free", "", 1)})
	got, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"waits":[{"waiter":"a","key":"y","holders":["b"],"waiting_ms":5000},` +
		`{"waiter":"b","key":"x","holders":["a"],"waiting_ms":4000},` +
		`{"waiter":"c","key":"free","holders":[],"waiting_ms":1000}],"deadlocks":[["a","b"]]}`
	if string(got) != want {
		t.Fatalf("json:\n%s\nwant:\n%s", got, want)
	}
	empty, _ := json.Marshal(lockview.AnalyzeBlocking(nil))
	if string(empty) != `{"waits":[],"deadlocks":[]}` {
		t.Fatalf("empty json: %s", empty)
	}
}
