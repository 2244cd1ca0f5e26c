package cli

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lockctl/lockctl/internal/textsafe"
)

// suggestCommand is `; did you mean "ls"?` for a mistyped command, "" when
// nothing is close. A command's SuggestFor (the words other tools use for
// it: `unlock` is nowhere near `release`) wins over cobra's edit-distance
// and prefix suggestions.
func suggestCommand(root *cobra.Command, typed string) string {
	for _, c := range root.Commands() {
		for _, word := range c.SuggestFor {
			if strings.EqualFold(word, typed) && c.IsAvailableCommand() {
				return fmt.Sprintf("; did you mean %q?", c.Name())
			}
		}
	}
	if root.Version != "" && strings.EqualFold(typed, "version") {
		return `; did you mean "--version"?`
	}
	if s := root.SuggestionsFor(typed); len(s) > 0 {
		return fmt.Sprintf("; did you mean %q?", s[0])
	}
	return ""
}

// suggestFlag is `; did you mean --owner?` for an unknown long flag close
// to one of cmd's flags, "" otherwise.
func suggestFlag(err error, fs *pflag.FlagSet) string {
	var unknown *pflag.NotExistError
	if !errors.As(err, &unknown) || unknown.GetSpecifiedShortnames() != "" {
		return ""
	}
	typed := strings.ToLower(unknown.GetSpecifiedName())
	best, bestDist := "", 0
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		if d := editDistance(typed, f.Name); best == "" || d < bestDist {
			best, bestDist = f.Name, d
		}
	})
	if best != "" && bestDist <= max(1, min(2, len([]rune(typed))/3)) {
		return "; did you mean --" + best + "?"
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

// flagError is the root's FlagErrorFunc: a flag cobra could not parse is
// a usage error naming the flag and value, with the flag probably meant.
func flagError(cmd *cobra.Command, err error) error {
	return usageErrorf("%s%s", describeParseError(err), suggestFlag(err, cmd.Flags()))
}

// clipValue is a rejected flag value as an error quotes it: its first 64
// bytes (whole runes) and an ellipsis, for a value refused for its length.
func clipValue(v string) string {
	if len(v) <= 64 {
		return v
	}
	cut := 64
	for cut > 0 && !utf8.RuneStart(v[cut]) {
		cut--
	}
	return v[:cut] + "…"
}

// describeParseError names the flag and value pflag rejected.
func describeParseError(err error) string {
	var invalid *pflag.InvalidValueError
	var unknown *pflag.NotExistError
	var needsValue *pflag.ValueRequiredError
	switch {
	case errors.As(err, &invalid):
		return fmt.Sprintf("invalid --%s %q: %v", invalid.GetFlag().Name, clipValue(invalid.GetValue()), invalid.Unwrap())
	case errors.As(err, &unknown):
		name := textsafe.Escape(unknown.GetSpecifiedName())
		if unknown.GetSpecifiedShortnames() != "" {
			return "unknown flag -" + name
		}
		return "unknown flag --" + name
	case errors.As(err, &needsValue):
		return fmt.Sprintf("flag --%s needs a value", needsValue.GetFlag().Name)
	}
	return textsafe.Escape(err.Error())
}
