package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/lockctl/lockctl/internal/cli"
	"github.com/lockctl/lockctl/locker"
)

var flagName = regexp.MustCompile(`--([a-z][a-z-]*)`)

// The command summaries in the README and docs/cli.md name every command,
// and only flags that command has: a new command or flag reaches the docs,
// and a renamed one does not linger there.
func TestDocsListEveryCommandWithItsFlags(t *testing.T) {
	root := newRoot()
	// "" is the root, the console; help and cobra's hidden __complete are
	// no commands of lockctl's own.
	commandByName := map[string]*cobra.Command{"": root}
	for _, cmd := range root.Commands() {
		if !cmd.IsAvailableCommand() {
			continue
		}
		if cmd.HasAvailableSubCommands() {
			// A group (context): its commands are listed, as "context ls".
			for _, sub := range cmd.Commands() {
				if sub.IsAvailableCommand() {
					commandByName[cmd.Name()+" "+sub.Name()] = sub
				}
			}
			continue
		}
		commandByName[cmd.Name()] = cmd
	}
	if len(commandByName) < 10 {
		t.Fatalf("the command tree holds %d commands; want every command of main.go", len(commandByName))
	}
	for _, page := range []string{"README.md", "docs/cli.md"} {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		lines := synopsisLines(string(text))
		if len(lines) == 0 {
			t.Fatalf("%s: no command summary (a code block of lines starting with \"lockctl\")", page)
		}
		listed := map[string]bool{}
		for _, line := range lines {
			name := synopsisCommand(line)
			if words := strings.Fields(line); len(words) > 2 && commandByName[name+" "+words[2]] != nil {
				name += " " + words[2] // a group's command: context ls
			}
			cmd, ok := commandByName[name]
			if !ok {
				t.Errorf("%s lists a command %q that does not exist:\n%s", page, name, line)
				continue
			}
			listed[name] = true
			// After " -- " come a command's own arguments (run KEY -- CMD).
			ownArgs, _, _ := strings.Cut(line, " -- ")
			for _, m := range flagName.FindAllStringSubmatch(ownArgs, -1) {
				if cmd.Flags().Lookup(m[1]) == nil && root.PersistentFlags().Lookup(m[1]) == nil {
					t.Errorf("%s lists --%s for %q, which has no such flag:\n%s", page, m[1], name, line)
				}
			}
		}
		for name := range commandByName {
			if !listed[name] {
				t.Errorf("%s does not list the command %q", page, name)
			}
		}
	}
}

// synopsisLines returns the lines of the command summaries: fenced code
// blocks in which every line starts with "lockctl " (examples of output
// start with "$ " or mix in other lines).
func synopsisLines(md string) []string {
	var out, block []string
	inBlock, summary := false, true
	for _, line := range strings.Split(md, "\n") {
		switch {
		case strings.HasPrefix(line, "```") && !inBlock:
			inBlock, summary, block = true, true, nil
		case strings.HasPrefix(line, "```"):
			inBlock = false
			if summary && len(block) > 0 {
				out = append(out, block...)
			}
		case inBlock && strings.HasPrefix(line, "lockctl "):
			block = append(block, line)
		case inBlock:
			summary = false
		}
	}
	return out
}

// synopsisCommand is the command a summary line names: "" for the console
// ("lockctl [--refresh D] …").
func synopsisCommand(line string) string {
	word := strings.Fields(line)[1]
	if strings.HasPrefix(word, "[") || strings.HasPrefix(word, "-") {
		return ""
	}
	return word
}

var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// Links between the README, BENCHMARKS.md and docs/ lead to a file that
// exists and, with a #fragment, to a heading in it: pages split and
// headings get renamed, and a dead link is how a reader finds out.
func TestDocsLinksResolve(t *testing.T) {
	pages, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, "README.md", "BENCHMARKS.md", "CHANGELOG.md")
	for _, page := range pages {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLink.FindAllStringSubmatch(string(text), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, fragment, _ := strings.Cut(target, "#")
			file := page
			if path != "" {
				file = filepath.Join(filepath.Dir(page), path)
			}
			body, err := os.ReadFile(file)
			if err != nil {
				t.Errorf("%s links to %s: %v", page, target, err)
				continue
			}
			if fragment != "" && !headingAnchors(string(body))[fragment] {
				t.Errorf("%s links to %s: %s has no heading #%s", page, target, file, fragment)
			}
		}
	}
}

// headingAnchors returns the anchors GitHub gives a page's headings:
// lower case, punctuation dropped, spaces turned into hyphens.
func headingAnchors(md string) map[string]bool {
	anchors := map[string]bool{}
	inBlock := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "```") {
			inBlock = !inBlock
		}
		if inBlock || !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(title) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		anchors[b.String()] = true
	}
	return anchors
}

// The README is a newcomer's page and BENCHMARKS.md a record, not a diary;
// reference material belongs in docs/. The screenshots load on a slow link.
func TestDocsStayInProportion(t *testing.T) {
	limits := map[string]int64{"README.md": 15 << 10, "BENCHMARKS.md": 13 << 10}
	shots, err := filepath.Glob("screenshots/*.png")
	if err != nil || len(shots) == 0 {
		t.Fatalf("no screenshots (%v)", err)
	}
	for _, shot := range shots {
		limits[shot] = 700 << 10
	}
	for file, limit := range limits {
		info, err := os.Stat(file)
		if err != nil {
			t.Fatal(err)
		}
		if info.Size() > limit {
			t.Errorf("%s is %d KB, over its %d KB", file, info.Size()>>10, limit>>10)
		}
	}
}

var keySetBound = regexp.MustCompile(`(?:1 to|at most|more than|up to) (\d+)(?: distinct)? keys`)

// Every page that bounds a key set gives the bound the code has
// (locker.MaxKeys, which the database's key set check shares).
func TestDocsGiveTheKeySetBound(t *testing.T) {
	pages, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, page := range append(pages, "README.md", "locker/doc.go") {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range keySetBound.FindAllStringSubmatch(strings.Join(strings.Fields(string(text)), " "), -1) {
			seen++
			if m[1] != strconv.Itoa(locker.MaxKeys) {
				t.Errorf("%s says %q; a key set has at most %d keys", page, m[0], locker.MaxKeys)
			}
		}
	}
	if seen < 3 {
		t.Fatalf("found %d statements of the key set bound in the docs; the pattern no longer matches them", seen)
	}
}

var changelogRelease = regexp.MustCompile(`(?m)^## (v\d+\.\d+\.\d+)\b`)

// The newest release CHANGELOG.md names is the one `lockctl --version`
// says, so a release is cut in both or neither.
func TestChangelogNamesThisRelease(t *testing.T) {
	text, err := os.ReadFile("CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	m := changelogRelease.FindStringSubmatch(string(text))
	if m == nil || m[1] != cli.ReleaseVersion {
		t.Fatalf("CHANGELOG.md's newest release is %v; lockctl --version says %s", m, cli.ReleaseVersion)
	}
}
