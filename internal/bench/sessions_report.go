package bench

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// SessionsReport is one run of the sessions scenario.
type SessionsReport struct {
	Started    time.Time     `json:"started"`
	Took       time.Duration `json:"took_ns"`
	NumCPU     int           `json:"num_cpu"`
	Server     ServerInfo    `json:"server"`
	TTL        time.Duration `json:"ttl_ns"`
	For        time.Duration `json:"measured_for_ns"`
	LoadBefore string        `json:"load_before,omitempty"`
	LoadAfter  string        `json:"load_after,omitempty"`
	Results    []KeepResult  `json:"results"`
}

// The targets for keeping leases alive with a session.
const (
	sessionWantStatementsPerSec = 5.0 // keeping 100 leases, every statement of the client
	sessionWantCPUPercent       = 1.0 // keeping 10,000 leases, of one core
)

// result is the series' result at n leases.
func (r *SessionsReport) result(series string, n int) (KeepResult, bool) {
	for _, x := range r.Results {
		if x.Series == series && x.Leases == n {
			return x, true
		}
	}
	return KeepResult{}, false
}

// WriteMarkdown prints the report as Markdown, as BENCHMARKS.md shows it.
func (r *SessionsReport) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	writeRunHeader(&b, r.Started, r.Took, r.NumCPU, r.Server, r.LoadBefore, r.LoadAfter)
	fmt.Fprintf(&b, "Leases of TTL %s kept alive (renewals or heartbeats every third of it), measured for %s each.\n\n", r.TTL, r.For)
	b.WriteString("| series | leases | statements/s | client CPU (one core) | server CPU (one core) | lost |\n|---|--:|--:|--:|--:|--:|\n")
	for _, x := range r.Results {
		fmt.Fprintf(&b, "| %s | %d | %.2f | %.2f%% | %.2f%% | %d |\n", x.Series, x.Leases, x.PerSecond, x.ClientCPU, x.ServerCPU, x.Lost)
	}
	b.WriteString("\n")
	for _, x := range r.Results {
		per, ok := r.result(KeepPerLease, x.Leases)
		if x.Series != KeepSession || !ok || x.PerSecond == 0 || x.ClientCPU == 0 {
			continue
		}
		fmt.Fprintf(&b, "- %d leases: one per lease sends %.0f× the statements of one session, and uses %.1f× its client CPU.\n",
			x.Leases, per.PerSecond/x.PerSecond, per.ClientCPU/x.ClientCPU)
	}
	if x, ok := r.result(KeepSession, 100); ok {
		fmt.Fprintf(&b, "- Keeping 100 leases with a session: %.2f statements/s (want ≤ %.0f): %s.\n",
			x.PerSecond, sessionWantStatementsPerSec, yesNo(x.PerSecond <= sessionWantStatementsPerSec && x.Lost == 0))
	}
	if x, ok := r.result(KeepSession, 10000); ok {
		fmt.Fprintf(&b, "- Keeping 10,000 leases with a session: client %.2f%% of a core, server %.2f%% (want < %.0f%%): %s.\n",
			x.ClientCPU, x.ServerCPU, sessionWantCPUPercent, yesNo(x.ClientCPU < sessionWantCPUPercent && x.Lost == 0))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
