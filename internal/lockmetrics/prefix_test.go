package lockmetrics

import (
	"fmt"
	"testing"
)

// A million distinct keys over many prefixes make at most the cap's
// labels and Other; the prefixes seen first keep their own, whatever
// follows.
func TestPrefixesStayBounded(t *testing.T) {
	p := NewPrefixes("", 100)
	labels := map[string]int{}
	for i := range 1_000_000 {
		labels[p.Of(fmt.Sprintf("tenant-%d:order:%d", i%5000, i))]++
	}
	if len(labels) != 101 {
		t.Fatalf("%d labels for a million keys over 5000 prefixes; want 100 and %q", len(labels), Other)
	}
	if labels["tenant-0"] != 200 || labels["tenant-99"] != 200 || labels[Other] != 1_000_000-100*200 {
		t.Errorf("tenant-0 %d, tenant-99 %d, other %d; want 200, 200 and the rest", labels["tenant-0"], labels["tenant-99"], labels[Other])
	}
	if got := p.Of("tenant-42:later"); got != "tenant-42" {
		t.Errorf("a prefix seen before the cap was reached: %q; want its own", got)
	}
}

// The prefix is the part before the separator, the whole key without one.
func TestPrefixOf(t *testing.T) {
	for _, c := range []struct {
		sep, key, want string
		max            int
	}{
		{"", "billing:nightly:eu", "billing", 10},
		{"", "nightly-report", "nightly-report", 10},
		{"", ":leading", "", 10},
		{"/", "jobs/42", "jobs", 10},
		{"/", "billing:nightly", "billing:nightly", 10},
	} {
		if got := NewPrefixes(c.sep, c.max).Of(c.key); got != c.want {
			t.Errorf("separator %q, cap %d: %q is %q; want %q", c.sep, c.max, c.key, got, c.want)
		}
	}
}
