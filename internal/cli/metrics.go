package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"

	"github.com/lockctl/lockctl/internal/lockmetrics"
	"github.com/lockctl/lockctl/internal/metrics"
)

// MetricsCommand is `lockctl metrics`.
func MetricsCommand() *cobra.Command {
	var o MetricsOptions
	cmd := &cobra.Command{
		Use:        "metrics",
		Short:      "serve Prometheus metrics (locks by state, oldest held lock, waits, grants/steals/force actions/rejected writes, wait and hold histograms by key prefix) at http://--listen/metrics",
		SuggestFor: []string{"prometheus"},
		RunE:       RunE(func(ctx context.Context, env Env, _ []string) int { return Metrics(ctx, env, o) }),
	}
	fs := cmd.Flags()
	fs.StringVar(&o.Listen, "listen", "127.0.0.1:9466", "`host:port` to serve on (:9466 for every interface)")
	fs.IntVar(&o.TopKeys, "top-keys", 10, "per-key waiter series for the `N` keys with the most waiters; 0: none")
	TTLVar(fs, &o.ScrapeTimeout, "scrape-timeout", 5*time.Second, "bound on one scrape's database reads")
	DurationVar(fs, &o.Settle, "settle", 5*time.Second, "count an event this long after it occurred, so its transaction has committed")
	fs.StringVar(&o.PrefixSeparator, "prefix-separator", lockmetrics.DefaultSeparator,
		"the histograms' prefix label is the part of the key before the first `SEP`")
	fs.IntVar(&o.MaxPrefixes, "max-prefixes", lockmetrics.DefaultMaxPrefixes,
		"histogram series for the first `N` distinct key prefixes; later ones count as \"other\"")
	return ReadOnlyOK(cmd)
}

// MetricsOptions are metrics's flags.
type MetricsOptions struct {
	Listen        string        // host:port to serve on
	TopKeys       int           // keys with a lockctl_key_waiters series
	ScrapeTimeout time.Duration // bound on one scrape's database reads
	Settle        time.Duration // see metrics.Config.Settle
	// PrefixSeparator and MaxPrefixes label the histograms: see
	// metrics.Config.
	PrefixSeparator string
	MaxPrefixes     int
}

// MaxTopKeys bounds --top-keys: each key is a series in Prometheus.
const MaxTopKeys = 1000

// shutdownTimeout bounds waiting for scrapes in flight after a signal.
const shutdownTimeout = 5 * time.Second

// Metrics serves Prometheus metrics on opts.Listen at /metrics until a
// signal ends it (exit 0). It connects first, so a wrong DSN or password
// fails at once; a database that goes away later shows as lockctl_up 0.
func Metrics(ctx context.Context, env Env, opts MetricsOptions) int {
	if opts.TopKeys < 0 || opts.TopKeys > MaxTopKeys {
		return env.Usagef("invalid --top-keys %d: must be between 0 and %d", opts.TopKeys, MaxTopKeys)
	}
	if opts.ScrapeTimeout <= 0 {
		return env.Usagef("invalid --scrape-timeout %s: must be positive", opts.ScrapeTimeout)
	}
	if opts.PrefixSeparator == "" {
		return env.Usagef("invalid --prefix-separator \"\": give the text that ends a key's prefix, as \":\" in billing:nightly")
	}
	if opts.MaxPrefixes < 1 || opts.MaxPrefixes > lockmetrics.MaxMaxPrefixes {
		return env.Usagef("invalid --max-prefixes %d: must be between 1 and %d", opts.MaxPrefixes, lockmetrics.MaxMaxPrefixes)
	}
	pool, err := Connect(ctx, env.DSN)
	if err != nil {
		return env.Fail(err)
	}
	defer pool.Close()

	reg := prometheus.NewRegistry()
	reg.MustRegister(
		metrics.New(metrics.Config{DB: pool, Timeout: opts.ScrapeTimeout, TopKeys: opts.TopKeys, Settle: opts.Settle,
			PrefixSeparator: opts.PrefixSeparator, MaxPrefixes: opts.MaxPrefixes}),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintln(w, "lockctl metrics: Prometheus metrics at /metrics")
	})

	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return env.Errorf("listen on %s: %v", opts.Listen, err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	env.printLine(fmt.Sprintf("%s: serving http://%s/metrics", env.Prog, ln.Addr()))

	select {
	case err := <-served:
		return env.Errorf("serve: %v", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return env.Errorf("shut down: %v", err)
	}
	return ExitOK
}
