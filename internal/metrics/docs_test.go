package metrics

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// docs/metrics.md documents exactly the metrics the collector exports, and
// its alert rules use only those (a histogram's by its series: _bucket,
// _sum, _count).
func TestDocsNameEveryMetric(t *testing.T) {
	page, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	descs := make(chan *prometheus.Desc, 64)
	New(Config{}).Describe(descs)
	close(descs)
	var exported []string
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	for d := range descs {
		exported = append(exported, fqName.FindStringSubmatch(d.String())[1])
	}
	documented := map[string]bool{}
	for _, name := range regexp.MustCompile("`(lockctl_[a-z_]+)`").FindAllStringSubmatch(string(page), -1) {
		documented[name[1]] = true
	}
	for _, name := range exported {
		if !documented[name] {
			t.Errorf("docs/metrics.md does not document %s", name)
		}
	}
	for _, name := range regexp.MustCompile(`\blockctl_[a-z_]+`).FindAllString(string(page), -1) {
		for _, series := range []string{"_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(name, series); ok && slices.Contains(exported, base) {
				name = base
			}
		}
		if !slices.Contains(exported, name) {
			t.Errorf("docs/metrics.md names %s, which is not exported", name)
		}
	}
	for _, rule := range []string{"alert: LockctlStuckLock", "alert: LockctlLongWait", "alert: LockctlSlowWaitP99"} {
		if !strings.Contains(string(page), rule) {
			t.Errorf("docs/metrics.md lacks the example alert rule %q", rule)
		}
	}
	if !strings.Contains(string(page), "histogram_quantile(0.99,") {
		t.Errorf("docs/metrics.md has no alert rule on the p99 wait")
	}
}
