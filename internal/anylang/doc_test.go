package anylang

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestProtocolDocShowsTheClients: docs/protocol.md links the clients that
// exist here and quotes the Java client's acquire statement as it is.
func TestProtocolDocShowsTheClients(t *testing.T) {
	page, err := os.ReadFile(filepath.Join("..", "..", "docs", "protocol.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(page)
	links := regexp.MustCompile(`\]\(\.\./(internal/anylang/testdata/[^)]+)\)`).FindAllStringSubmatch(doc, -1)
	if len(links) < 2 {
		t.Fatalf("docs/protocol.md links %d of the clients in internal/anylang/testdata, want the Java and the psql one", len(links))
	}
	for _, l := range links {
		if _, err := os.Stat(filepath.Join("..", "..", l[1])); err != nil {
			t.Errorf("docs/protocol.md links %s: %v", l[1], err)
		}
	}
	java, err := os.ReadFile(filepath.Join("testdata", "java", "DistributedLock.java"))
	if err != nil {
		t.Fatal(err)
	}
	quoted := regexp.MustCompile(`(?s)    private static final String ACQUIRE =\n.*?;\n`).FindString(string(java))
	if quoted == "" {
		t.Fatal("DistributedLock.java has no ACQUIRE statement")
	}
	if !strings.Contains(doc, quoted) {
		t.Errorf("docs/protocol.md does not quote DistributedLock.java's acquire statement as it is:\n%s", quoted)
	}
}
