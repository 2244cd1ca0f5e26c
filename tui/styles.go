package tui

import (
	"image/color"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/textinput"
	"charm.land/lipgloss/v2"
)

// Theme picks the console's palette.
type Theme string

const (
	// ThemeAuto (or "") follows the background the terminal reports, dark
	// until it answers (and when it does not).
	ThemeAuto  Theme = "auto"
	ThemeDark  Theme = "dark"
	ThemeLight Theme = "light"
)

// Themes are the values --theme takes.
var Themes = []string{string(ThemeAuto), string(ThemeDark), string(ThemeLight)}

// Styles holds every style the console draws with, by meaning. It is the
// only place colours are chosen; newStyles picks them for a dark or light
// terminal background.
type Styles struct {
	App      lipgloss.Style // title
	Muted    lipgloss.Style // secondary text, free rows
	Label    lipgloss.Style // "held", "sort:" and other captions
	Value    lipgloss.Style // numbers and values next to captions
	Error    lipgloss.Style
	Warning  lipgloss.Style
	OK       lipgloss.Style
	Live     lipgloss.Style // connection indicator when healthy
	Held     lipgloss.Style
	Expiring lipgloss.Style
	Expired  lipgloss.Style
	Free     lipgloss.Style
	Delayed  lipgloss.Style // a key in its lock-delay: nobody holds it, nobody may take it
	Group    lipgloss.Style // a shared or semaphore key's holders, where an owner would stand
	Header   lipgloss.Style // table column titles
	Selected lipgloss.Style // the cursor row
	Spark    lipgloss.Style
	Dialog   lipgloss.Style // bordered box of confirmations and forms
	Danger   lipgloss.Style // dialog title of a destructive action
	Button   lipgloss.Style
	Focused  lipgloss.Style // the focused button
	Key      lipgloss.Style // key names in help text
	BarEmpty lipgloss.Style // unfilled part of a TTL bar
	Help     help.Styles    // the help bubble's keys and descriptions
	Input    textinput.Styles

	isDark bool
	// contextShades are the context colours' names' shades, for this
	// background (contextBadge).
	contextShades map[string]color.Color
}

// newStyles builds the palette for a dark or light background.
func newStyles(isDark bool) Styles {
	ld := lipgloss.LightDark(isDark)
	c := func(light, dark string) color.Color { return ld(lipgloss.Color(light), lipgloss.Color(dark)) }
	green, yellow, red := c("#1A7F37", "#3FB950"), c("#9A6700", "#D29922"), c("#CF222E", "#F85149")
	purple := c("#8250DF", "#BC8CFF")
	muted, text, accent := c("#6E7781", "#8B949E"), c("#1F2328", "#E6EDF3"), c("#0969DA", "#58A6FF")
	selBg := c("#DDF4FF", "#1C2B3F") // dark: a navy that stays navy in 256 colours (#1F3A5F turns teal there)
	keyStyle := lipgloss.NewStyle().Foreground(accent).Bold(true)
	input := textinput.DefaultStyles(isDark)
	for _, st := range []*textinput.StyleState{&input.Focused, &input.Blurred} {
		st.Prompt = lipgloss.NewStyle().Foreground(accent).Bold(true)
		st.Placeholder = lipgloss.NewStyle().Foreground(muted)
		st.Suggestion = st.Placeholder
		st.Text = lipgloss.NewStyle().Foreground(text)
	}
	input.Cursor.Color = accent
	descStyle := lipgloss.NewStyle().Foreground(muted)
	sepStyle := lipgloss.NewStyle().Foreground(c("#D0D7DE", "#30363D"))
	return Styles{
		Help: help.Styles{ShortKey: keyStyle, ShortDesc: descStyle, ShortSeparator: sepStyle,
			FullKey: keyStyle, FullDesc: lipgloss.NewStyle().Foreground(text), FullSeparator: sepStyle,
			Ellipsis: sepStyle},
		App:      lipgloss.NewStyle().Bold(true).Foreground(accent),
		Muted:    lipgloss.NewStyle().Foreground(muted),
		Label:    lipgloss.NewStyle().Foreground(muted),
		Value:    lipgloss.NewStyle().Foreground(text).Bold(true),
		Error:    lipgloss.NewStyle().Foreground(red).Bold(true),
		Warning:  lipgloss.NewStyle().Foreground(yellow).Bold(true),
		OK:       lipgloss.NewStyle().Foreground(green),
		Live:     lipgloss.NewStyle().Foreground(green).Bold(true),
		Held:     lipgloss.NewStyle().Foreground(green),
		Expiring: lipgloss.NewStyle().Foreground(yellow).Bold(true),
		Expired:  lipgloss.NewStyle().Foreground(red).Bold(true),
		Free:     lipgloss.NewStyle().Foreground(muted),
		Delayed:  lipgloss.NewStyle().Foreground(purple).Bold(true),
		Group:    lipgloss.NewStyle().Foreground(accent),
		Header:   lipgloss.NewStyle().Foreground(muted).Bold(true).Underline(true),
		Selected: lipgloss.NewStyle().Background(selBg).Bold(true),
		Spark:    lipgloss.NewStyle().Foreground(accent),
		Dialog:   lipgloss.NewStyle().Border(lipgloss.RoundedBorder()).BorderForeground(accent).Padding(0, 1),
		Danger:   lipgloss.NewStyle().Foreground(red).Bold(true),
		Button:   lipgloss.NewStyle().Foreground(text).Padding(0, 1),
		Focused:  lipgloss.NewStyle().Foreground(c("#FFFFFF", "#0D1117")).Background(accent).Bold(true).Padding(0, 1),
		Key:      lipgloss.NewStyle().Foreground(accent).Bold(true),
		BarEmpty: lipgloss.NewStyle().Foreground(c("#D0D7DE", "#30363D")),
		Input:    input,
		isDark:   isDark,
		contextShades: map[string]color.Color{
			"red": red, "orange": c("#BC4C00", "#F0883E"), "yellow": c("#BF8700", "#D29922"), "green": green,
			"cyan": c("#1B7C83", "#39C5CF"), "blue": accent, "purple": purple, "pink": c("#BF3989", "#F778BA"),
			"gray": muted,
		},
	}
}

// contextBadge is the style a context's name is shown in: on its colour
// (a name of contexts.ColorNames, in this background's shade, or #hex;
// "" a neutral grey), in black or white, whichever reads better on it.
func (s Styles) contextBadge(name string) lipgloss.Style {
	bg, ok := s.contextShades[name]
	if !ok && name != "" {
		bg = lipgloss.Color(name)
	}
	if bg == nil {
		bg = s.contextShades["gray"]
	}
	black, white := lipgloss.Color("#000000"), lipgloss.Color("#FFFFFF")
	fg := white
	if contrastRatio(black, bg) > contrastRatio(white, bg) {
		fg = black
	}
	return lipgloss.NewStyle().Background(bg).Foreground(fg).Bold(true).Padding(0, 1)
}
