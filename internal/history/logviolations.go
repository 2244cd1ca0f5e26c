package history

// Logger is the part of a testing.TB that LogViolations needs, so this
// package does not import testing.
type Logger interface {
	Helper()
	Logf(format string, args ...any)
}

// maxLoggedViolations keeps a badly broken run's log readable: the first
// few violations show the pattern, the count says how far it went.
const maxLoggedViolations = 20

// LogViolations logs the first 20 violations the check found, then how many
// more there were.
func (r Report) LogViolations(t Logger) {
	t.Helper()
	for i, v := range r.Violations {
		if i == maxLoggedViolations {
			t.Logf("… and %d more", len(r.Violations)-maxLoggedViolations)
			break
		}
		t.Logf("%s", v)
	}
}
