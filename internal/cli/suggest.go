package cli

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// commandSynonyms maps words other tools use for a command to lockctl's
// name for it, for "did you mean" when the edit distance is no help
// (`lockctl unlock` is nowhere near `release`).
var commandSynonyms = map[string]string{
	"list": "ls", "show": "ls", "status": "ls", "watch": "ls",
	"lock": "acquire", "take": "acquire", "get": "acquire",
	"unlock": "release", "free": "release",
	"extend": "renew", "refresh": "renew",
	"exec": "run",
	"log":  "events", "logs": "events", "history": "events",
	"steal": "expire", "kill": "expire",
	"init": "migrate", "setup": "migrate",
	"gc": "prune", "cleanup": "prune", "clean": "prune",
	"prometheus": "metrics", "serve": "metrics",
	"completions": "completion",
	"version":     "--version",
}

// suggestCommand is ` (did you mean "ls"?)` for a mistyped command, or ""
// when nothing is close.
func (p Program) suggestCommand(typed string) string {
	names := make([]string, 0, len(p.Commands)+1)
	for _, c := range p.Commands {
		if c.Name != "" {
			names = append(names, c.Name)
		}
	}
	if p.Version != "" {
		names = append(names, "--version")
	}
	if to, ok := commandSynonyms[strings.ToLower(typed)]; ok && slices.Contains(names, to) {
		return fmt.Sprintf("; did you mean %q?", to)
	}
	if best := closest(typed, names); best != "" {
		return fmt.Sprintf("; did you mean %q?", best)
	}
	return ""
}

// suggestFlag is `; did you mean --owner?` for an unknown long flag close
// to one of fs's flags, "" otherwise.
func suggestFlag(err error, fs *pflag.FlagSet) string {
	var unknown *pflag.NotExistError
	if !errors.As(err, &unknown) || unknown.GetSpecifiedShortnames() != "" {
		return ""
	}
	var names []string
	fs.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	if best := closest(unknown.GetSpecifiedName(), names); best != "" {
		return "; did you mean --" + best + "?"
	}
	return ""
}

// closest is the candidate nearest to typed, if near enough to be a slip:
// an edit distance of at most a third of the word (at least 1, at most 2),
// or typed being a prefix of exactly one candidate. "" when none is.
func closest(typed string, candidates []string) string {
	typed = strings.ToLower(typed)
	best, bestDist := "", 0
	for _, c := range candidates {
		d := editDistance(typed, strings.ToLower(c))
		if best == "" || d < bestDist {
			best, bestDist = c, d
		}
	}
	if best != "" && bestDist <= max(1, min(2, len([]rune(typed))/3)) {
		return best
	}
	var prefixed []string
	for _, c := range candidates {
		if len(typed) >= 2 && strings.HasPrefix(strings.ToLower(c), typed) {
			prefixed = append(prefixed, c)
		}
	}
	if len(prefixed) == 1 {
		return prefixed[0]
	}
	return ""
}

// editDistance is the optimal string alignment distance between a and b,
// by rune: insertions, deletions, substitutions and swaps of two adjacent
// runes ("wiat" is one slip from "wait") each count 1.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
