package demo

import (
	"reflect"
	"testing"
)

// jobs draws the first n rounds of contender index under seed.
func jobs(seed uint64, index, n int) []job {
	s := &Sim{cfg: Config{Seed: seed}.withDefaults()}
	r := s.rng(roleContender, index)
	out := make([]job, n)
	for i := range out {
		out[i] = s.nextJob(r)
	}
	return out
}

func TestSameSeedSameChoices(t *testing.T) {
	a, b := jobs(7, 3, 50), jobs(7, 3, 50)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two runs with seed 7 drew different jobs for the same worker")
	}
	if reflect.DeepEqual(a, jobs(8, 3, 50)) {
		t.Error("seeds 7 and 8 drew the same 50 jobs")
	}
	if reflect.DeepEqual(a, jobs(7, 4, 50)) {
		t.Error("workers 3 and 4 drew the same 50 jobs")
	}
	crashes := 0
	for _, j := range a {
		if j.crash {
			crashes++
		}
	}
	if crashes == 0 || crashes == len(a) {
		t.Errorf("%d of %d jobs crash at the default chance; want some, not all", crashes, len(a))
	}
}

// The transfer's draws too depend on the seed alone, and always name two
// different accounts, every pair in time.
func TestSameSeedSameTransfers(t *testing.T) {
	draw := func(seed uint64) []transferJob {
		s := &Sim{cfg: Config{Seed: seed}.withDefaults()}
		r := s.rng(roleTransfer, 0)
		out := make([]transferJob, 50)
		for i := range out {
			out[i] = s.nextTransfer(r)
		}
		return out
	}
	a := draw(7)
	if !reflect.DeepEqual(a, draw(7)) {
		t.Fatal("two runs with seed 7 drew different transfers")
	}
	if reflect.DeepEqual(a, draw(8)) {
		t.Error("seeds 7 and 8 drew the same 50 transfers")
	}
	pairs := map[[2]int]bool{}
	for _, j := range a {
		if j.from == j.to {
			t.Fatalf("a transfer from %s to itself", accounts[j.from])
		}
		pairs[[2]int{min(j.from, j.to), max(j.from, j.to)}] = true
	}
	if want := len(accounts) * (len(accounts) - 1) / 2; len(pairs) != want {
		t.Errorf("50 transfers touched %d pairs of accounts; want all %d", len(pairs), want)
	}
}
