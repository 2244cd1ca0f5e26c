package tui

import (
	"fmt"
	"image/color"
	"slices"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	uv "github.com/charmbracelet/ultraviolet"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/lockctl/lockctl/internal/contexts"
)

// Each theme is checked on the terminal backgrounds it is for: plain
// ones (black and GitHub's dark; white), where every glyph of text must
// reach WCAG's AA contrast for body text, 4.5:1, and softer ones (One
// Dark's; Solarized light), where it must reach AA for large text, 3:1,
// as it must on the console's own backgrounds (the selected row, the
// focused button, a context's badge). themeText is the terminal's own
// text colour under each theme, for text the console leaves uncoloured.
var (
	plainBackgrounds = map[Theme][]color.Color{
		ThemeDark:  {lipgloss.Color("#000000"), lipgloss.Color("#0D1117")},
		ThemeLight: {lipgloss.Color("#FFFFFF")},
	}
	softBackgrounds = map[Theme][]color.Color{
		ThemeDark:  {lipgloss.Color("#282C34")},
		ThemeLight: {lipgloss.Color("#FDF6E3")},
	}
	themeText = map[Theme]color.Color{ThemeDark: lipgloss.Color("#C9D1D9"), ThemeLight: lipgloss.Color("#24292F")}
)

const (
	bodyContrast  = 4.5
	largeContrast = 3.0
)

// decoration are glyphs drawn as shapes, not read as text: the empty
// part of a bar and the help's separators may be faint.
const decoration = "░•"

// lowContrast lists the glyphs of view (ANSI kept) that read worse than
// they must under theme: "line 3 col 7 \"x\" #8B949E on #282C34: 2.1:1".
// On the plain backgrounds text must reach plainMin (bodyContrast for the
// palette as chosen; a terminal of 256 colours shifts each to the nearest
// it has, which costs some).
func lowContrast(view string, theme Theme, plainMin float64) []string {
	type backdrop struct {
		bg  color.Color
		min float64
	}
	var terminal []backdrop
	for _, bg := range plainBackgrounds[theme] {
		terminal = append(terminal, backdrop{bg, plainMin})
	}
	for _, bg := range softBackgrounds[theme] {
		terminal = append(terminal, backdrop{bg, largeContrast})
	}
	var low []string
	for y, line := range uv.NewStyledString(view).Lines(ansi.GraphemeWidth) {
		for x, cell := range line {
			if strings.TrimSpace(cell.Content) == "" || strings.ContainsAny(cell.Content, decoration) {
				continue
			}
			fg := cell.Style.Fg
			if fg == nil {
				fg = themeText[theme]
			}
			backs := terminal
			if cell.Style.Bg != nil {
				backs = []backdrop{{cell.Style.Bg, largeContrast}}
			}
			for _, b := range backs {
				if r := contrastRatio(fg, b.bg); r < b.min {
					low = append(low, fmt.Sprintf("line %d col %d %q %s on %s: %.1f:1, under %.1f:1",
						y+1, x+1, cell.Content, hex(fg), hex(b.bg), r, b.min))
					break
				}
			}
		}
	}
	return low
}

func hex(c color.Color) string {
	r, g, b, _ := c.RGBA()
	return fmt.Sprintf("#%02X%02X%02X", r>>8, g>>8, b>>8)
}

// Every state of every page, in both themes and at every size the goldens
// pin, reads on the backgrounds of its theme: no glyph of text falls
// below the contrast it must have (pg_activity's users' complaint:
// columns invisible on a dark terminal).
func TestThemesAreReadable(t *testing.T) {
	for _, theme := range []Theme{ThemeDark, ThemeLight} {
		for name, build := range consoleStates(theme) {
			for _, size := range [][2]int{{80, 24}, {200, 50}, {60, 15}} {
				m := build(t, size[0], size[1])
				if low := lowContrast(m.View().Content, theme, bodyContrast); len(low) > 0 {
					t.Errorf("%s, %s theme, %dx%d: %d glyphs read poorly, first %s", name, theme, size[0], size[1], len(low), low[0])
				}
			}
		}
	}
}

// TestGoldenThemes pins every state's colours in both themes, ANSI kept,
// at 120x35 (TestGolden pins the text at three sizes). Regenerate with
// `go test ./tui -run TestGoldenThemes -update`.
func TestGoldenThemes(t *testing.T) {
	for _, theme := range []Theme{ThemeDark, ThemeLight} {
		for name, build := range consoleStates(theme) {
			t.Run(fmt.Sprintf("%s_%s", name, theme), func(t *testing.T) {
				golden.RequireEqual(t, []byte(build(t, 120, 35).View().Content))
			})
		}
	}
}

// --theme dark or light is kept whatever the terminal reports; auto
// follows it.
func TestFixedThemeIgnoresTheTerminal(t *testing.T) {
	darkBackground := tea.BackgroundColorMsg{Color: lipgloss.Color("#000000")}
	lightBackground := tea.BackgroundColorMsg{Color: lipgloss.Color("#FFFFFF")}
	if m := step(t, testModel(t, Options{Theme: ThemeLight}, 80, 24), darkBackground); m.styles.isDark {
		t.Error("--theme light turned dark on a dark terminal's report")
	}
	if m := step(t, testModel(t, Options{Theme: ThemeDark}, 80, 24), lightBackground); !m.styles.isDark {
		t.Error("--theme dark turned light on a light terminal's report")
	}
	if m := step(t, testModel(t, Options{}, 80, 24), lightBackground); m.styles.isDark {
		t.Error("--theme auto stayed dark on a light terminal's report")
	}
}

// A context's name reads on its colour, any colour the contexts file
// takes, in both themes: black or white, whichever contrasts more.
func TestContextBadgesRead(t *testing.T) {
	colours := append(append([]string{}, contexts.ColorNames...), "", "#FFD700", "#000080", "#777777", "#fff", "#7F7F7F")
	for _, dark := range []bool{true, false} {
		s := newStyles(dark)
		for _, c := range colours {
			if _, named := s.contextShades[c]; !named && slices.Contains(contexts.ColorNames, c) {
				t.Errorf("colour name %q has no shade", c)
			}
			st := s.contextBadge(c)
			if r := contrastRatio(st.GetForeground(), st.GetBackground()); r < bodyContrast {
				t.Errorf("dark %v, colour %q: the name reads at %.1f:1", dark, c, r)
			}
		}
	}
}
