package lockview

import (
	"cmp"
	"maps"
	"slices"
)

// AnalyzeBlocking orders waits (longest waiting first) and finds the
// deadlocks among them: the owners that wait, through one another, for
// themselves. Pure: ReadBlocking feeds it one read of the database.
func AnalyzeBlocking(waits []Wait) Blocking {
	ws := make([]Wait, 0, len(waits))
	for _, w := range waits {
		// A waiting key set has a record on each of its keys, those its
		// owner already holds too (they are renewed when the set is
		// granted): such a record waits for nobody.
		if len(w.Holders) == 1 && w.Holders[0] == w.Waiter {
			continue
		}
		if w.Holders == nil {
			w.Holders = []string{}
		}
		ws = append(ws, w)
	}
	slices.SortStableFunc(ws, func(a, b Wait) int {
		return cmp.Or(cmp.Compare(b.Waited, a.Waited), cmp.Compare(a.Waiter, b.Waiter), cmp.Compare(a.Key, b.Key))
	})
	return Blocking{Waits: ws, Deadlocks: deadlocks(ws)}
}

// waitsFor is the owner graph: each waiter points at the holders of the
// keys it waits for, sorted, without repeats.
func waitsFor(waits []Wait) map[string][]string {
	g := map[string][]string{}
	for _, w := range waits {
		g[w.Waiter] = append(g[w.Waiter], w.Holders...)
	}
	for o, next := range g {
		slices.Sort(next)
		g[o] = slices.Compact(next)
	}
	return g
}

// deadlocks are the strongly connected parts of the owner graph that hold
// a cycle of two owners or more, found with Tarjan's algorithm. Each is listed from its smallest
// owner along wait edges, so a ring reads in wait order; sorted by that
// first owner.
func deadlocks(waits []Wait) [][]string {
	g := waitsFor(waits)
	owners := slices.Sorted(maps.Keys(g))
	index, low := map[string]int{}, map[string]int{}
	onStack := map[string]bool{}
	var stack []string
	var found [][]string
	var visit func(o string)
	visit = func(o string) {
		index[o], low[o] = len(index), len(index)
		stack = append(stack, o)
		onStack[o] = true
		for _, n := range g[o] {
			if _, seen := index[n]; !seen {
				visit(n)
				low[o] = min(low[o], low[n])
			} else if onStack[n] {
				low[o] = min(low[o], index[n])
			}
		}
		if low[o] != index[o] {
			return
		}
		var part []string
		for {
			top := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			onStack[top] = false
			part = append(part, top)
			if top == o {
				break
			}
		}
		if len(part) > 1 {
			found = append(found, ringOrder(part, g))
		}
	}
	for _, o := range owners {
		if _, seen := index[o]; !seen {
			visit(o)
		}
	}
	slices.SortFunc(found, func(a, b []string) int { return cmp.Compare(a[0], b[0]) })
	if found == nil {
		found = [][]string{}
	}
	return found
}

// ringOrder lists the owners of one strongly connected part from the
// smallest, each followed by the smallest not yet listed that it waits
// for: a ring comes out in wait order.
func ringOrder(part []string, g map[string][]string) []string {
	in := map[string]bool{}
	for _, o := range part {
		in[o] = true
	}
	out := []string{slices.Min(part)}
	listed := map[string]bool{out[0]: true}
	var walk func(o string)
	walk = func(o string) {
		for _, n := range g[o] {
			if in[n] && !listed[n] {
				listed[n] = true
				out = append(out, n)
				walk(n)
			}
		}
	}
	walk(out[0])
	return out
}

// Roots are the root blockers: owners that hold a key someone waits for
// and wait for nothing themselves. Sorted.
func (b Blocking) Roots() []string {
	waiting := map[string]bool{}
	for _, w := range b.Waits {
		waiting[w.Waiter] = true
	}
	var roots []string
	for _, w := range b.Waits {
		for _, h := range w.Holders {
			if !waiting[h] && !slices.Contains(roots, h) {
				roots = append(roots, h)
			}
		}
	}
	slices.Sort(roots)
	return roots
}

// Waiters counts the distinct owners that wait.
func (b Blocking) Waiters() int {
	seen := map[string]bool{}
	for _, w := range b.Waits {
		seen[w.Waiter] = true
	}
	return len(seen)
}
