package lockview

import (
	"cmp"
	"slices"
	"time"
)

// BlockTreeKind says what stands at the top of a BlockTree.
type BlockTreeKind int

const (
	// TreeRoot: the top owner is a root blocker (Blocking.Roots).
	TreeRoot BlockTreeKind = iota
	// TreeDeadlock: the top owner is the first of a deadlock; the tree
	// comes back to it.
	TreeDeadlock
	// TreeUnheld: the top owner waits for a key nobody holds (its Wait):
	// it is next in line, nobody blocks it.
	TreeUnheld
)

// BlockNode is an owner in the who-waits-for-whom forest.
type BlockNode struct {
	Owner string
	// Wait is what Owner waits for (a key held by the owner above); nil at
	// the top of a root or deadlock tree.
	Wait *Wait
	// Blocked are the waits Owner holds up (their key is Owner's), longest
	// waiting first.
	Blocked []BlockNode
	// Cycle: Owner is already on the path above: a deadlock; the walk
	// stops here.
	Cycle bool
	// Repeat: Owner's blocked waits are shown higher up in this tree
	// (it waits for more than one of its keys' holders); not expanded again.
	Repeat bool
}

// BlockTree is one chain of waits down from an owner nobody in the tree
// waits behind: a root blocker, a deadlock, or a wait for an unheld key.
type BlockTree struct {
	Kind BlockTreeKind
	Top  BlockNode
	// Deadlock is the cycle, for a TreeDeadlock (one of Blocking.Deadlocks).
	Deadlock []string
	// Longest is the longest wait in the tree.
	Longest time.Duration
	// Blocked counts the waits in the tree.
	Blocked int
}

// Trees is the forest an operator reads: root blockers first (the tree
// with the longest wait first), then deadlocks, then waits for keys nobody
// holds. Every wait appears in at least one tree.
func (b Blocking) Trees() []BlockTree {
	heldBy := map[string][]int{} // owner → indexes of the waits it holds up
	for i, w := range b.Waits {
		for _, h := range w.Holders {
			heldBy[h] = append(heldBy[h], i)
		}
	}
	grow := func(kind BlockTreeKind, top BlockNode) BlockTree {
		t := BlockTree{Kind: kind}
		expanded := map[string]bool{}
		var expand func(n *BlockNode, path []string)
		expand = func(n *BlockNode, path []string) {
			if n.Wait != nil {
				t.Blocked++
				t.Longest = max(t.Longest, n.Wait.Waited)
			}
			if slices.Contains(path, n.Owner) {
				n.Cycle = true
				return
			}
			if expanded[n.Owner] {
				n.Repeat = len(heldBy[n.Owner]) > 0
				return
			}
			expanded[n.Owner] = true
			path = append(path, n.Owner)
			for _, i := range heldBy[n.Owner] {
				child := BlockNode{Owner: b.Waits[i].Waiter, Wait: &b.Waits[i]}
				expand(&child, path)
				n.Blocked = append(n.Blocked, child)
			}
		}
		expand(&top, nil)
		t.Top = top
		return t
	}
	var roots []BlockTree
	for _, r := range b.Roots() {
		roots = append(roots, grow(TreeRoot, BlockNode{Owner: r}))
	}
	slices.SortStableFunc(roots, func(x, y BlockTree) int { return cmp.Compare(y.Longest, x.Longest) })
	trees := roots
	for _, d := range b.Deadlocks {
		t := grow(TreeDeadlock, BlockNode{Owner: d[0]})
		t.Deadlock = d
		trees = append(trees, t)
	}
	for i, w := range b.Waits {
		if len(w.Holders) == 0 {
			trees = append(trees, grow(TreeUnheld, BlockNode{Owner: w.Waiter, Wait: &b.Waits[i]}))
		}
	}
	return trees
}
