package tui

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/lockctl/lockctl/internal/export"
	"github.com/lockctl/lockctl/store"
)

// exportTimeout bounds writing one export, reads included.
const exportTimeout = 5 * time.Minute

// exporter is a page whose view E writes to a file. A new page offers its
// rows by implementing it: nothing else changes.
type exporter interface {
	exportView() exportView
}

// exportView is what a page hands over to be written: rows under columns
// (package export's rules name and write them).
type exportView struct {
	// name is the page's, in the file name proposed and the message:
	// "locks", "events", "waits".
	name string
	// about says what will be written, in the prompt: "the 1,204 locks
	// matching "bill", sorted by TTL".
	about   string
	columns []string
	// rows calls add with each row, in order. It runs in a command, so it
	// may read db (the locks page reads every row of its query, not only
	// the window on screen); what it needs of the page is copied first.
	rows func(ctx context.Context, db store.DBTX, add func([]any) error) error
}

// exportPrompt asks where to write: the file's extension picks CSV or
// JSON; the name proposed is the page's and the time, in the current
// directory.
type exportPrompt struct {
	view  exportView
	input textinput.Model
	err   string
}

// startExport opens the prompt for the page on screen, or says it has
// nothing to export.
func (m Model) startExport() (Model, tea.Cmd) {
	e, ok := m.pages[m.active].(exporter)
	if !ok {
		m.flash = flash{"this page has nothing to export: E writes the locks table, the event log, the blocking page or the hot keys", flashError}
		return m, nil
	}
	v := e.exportView()
	in := textinput.New()
	in.Prompt = ""
	in.CharLimit = 4096
	in.SetStyles(m.styles.Input)
	in.SetWidth(max(10, min(m.width-16, 64)))
	in.SetValue(fmt.Sprintf("lockctl-%s-%s.csv", v.name, m.now().UTC().Format("20060102T150405Z")))
	in.CursorEnd()
	m.export = &exportPrompt{view: v, input: in}
	return m, m.export.input.Focus()
}

// exportKey edits the path, writes on enter, cancels on esc.
func (m Model) exportKey(msg tea.KeyPressMsg) (Model, tea.Cmd) {
	p := *m.export
	switch {
	case key.Matches(msg, m.keys.Close):
		m.export = nil
		m.flash = flash{"export cancelled", flashInfo}
		return m, nil
	case key.Matches(msg, m.keys.Confirm):
		path := strings.TrimSpace(p.input.Value())
		if _, err := export.FormatOf(path); err != nil {
			p.err = safe(err.Error())
			m.export = &p
			return m, nil
		}
		m.export = nil
		m.flash = flash{"exporting " + p.view.name + " to " + safe(path) + "…", flashInfo}
		return m, runExport(m.ctx, m.opts.Pool, p.view, path)
	}
	var cmd tea.Cmd
	p.input, cmd = p.input.Update(msg)
	p.err = ""
	m.export = &p
	return m, cmd
}

// exportDone says where the export went, or why it did not.
func (m Model) exportDone(msg exportDoneMsg) (Model, tea.Cmd) {
	if msg.err != nil {
		m.flash = flash{"✗ export not written: " + errMeaning(msg.err), flashError}
	} else {
		m.flash = flash{fmt.Sprintf("✓ wrote %s to %s", plural(int64(msg.rows), "row of "+msg.name, "rows of "+msg.name), safe(msg.path)), flashOK}
	}
	return m, nil
}

// runExport writes v to path in a command.
func runExport(ctx context.Context, db store.DBTX, v exportView, path string) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, exportTimeout)
		defer cancel()
		abs, rows, err := writeExport(ctx, db, v, path)
		return exportDoneMsg{name: v.name, path: abs, rows: rows, err: err}
	}
}

// writeExport writes v's rows to a new file at path, in the format its
// extension names. An existing file is never overwritten; a write that
// fails midway removes what it wrote, so no partial export is left to be
// taken for a whole one.
func writeExport(ctx context.Context, db store.DBTX, v exportView, path string) (abs string, rows int, err error) {
	format, err := export.FormatOf(path)
	if err != nil {
		return path, 0, err
	}
	if abs, err = filepath.Abs(path); err != nil {
		return path, 0, err
	}
	// 0600: lock keys, owners and metadata may be more than the file's
	// readers should see; the operator widens it if they want.
	f, err := os.OpenFile(abs, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return abs, 0, fmt.Errorf("%s exists: give another name", abs)
	}
	if err != nil {
		return abs, 0, err
	}
	buf := bufio.NewWriterSize(f, 64<<10)
	w := export.New(format, buf, v.columns)
	err = v.rows(ctx, db, func(values []any) error {
		rows++
		return w.Write(values)
	})
	if err == nil {
		err = w.Close()
	}
	if err == nil {
		err = buf.Flush()
	}
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		_ = os.Remove(abs)
		return abs, 0, err
	}
	return abs, rows, nil
}

// viewIn is the prompt's dialog, for a terminal termW wide.
func (p *exportPrompt) viewIn(s Styles, termW int) string {
	w := min(max(termW-6, 30), 80)
	lines := []string{s.App.Render("Export " + p.view.about), "",
		s.Label.Render("file  ") + p.input.View(), ""}
	if p.err != "" {
		lines = append(lines, s.Error.Render(clip(p.err, w-4)), "")
	}
	lines = append(lines, s.Muted.Render(clip("the extension picks the format: .csv or .json", w-4)),
		s.Muted.Render(clip("a relative path starts where lockctl was started", w-4)))
	return s.Dialog.Width(w).Render(strings.Join(lines, "\n"))
}
