package patroni_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/lockctl/lockctl/internal/testdb"
)

// This file reads and steers the cluster through Patroni's REST API, as
// patronictl does.

// clusterState is GET /cluster's answer.
type clusterState struct {
	Members []member `json:"members"`
}

type member struct {
	Name  string `json:"name"`
	Role  string `json:"role"`  // leader, sync_standby or replica
	State string `json:"state"` // running, streaming (later Patronis), starting, ...
}

// leader is the running leader's name, or "".
func (s clusterState) leader() string {
	for _, m := range s.Members {
		if m.Role == "leader" && m.State == "running" {
			return m.Name
		}
	}
	return ""
}

// syncStandbys are the members a commit waits for that are replicating:
// those a failover may promote without losing an acknowledged commit.
func (s clusterState) syncStandbys() []string {
	var names []string
	for _, m := range s.Members {
		if m.Role == "sync_standby" && (m.State == "running" || m.State == "streaming") {
			names = append(names, m.Name)
		}
	}
	return names
}

func (s clusterState) String() string {
	b, _ := json.Marshal(s.Members)
	return string(b)
}

// restClient bounds every REST call: a member that hangs is as good as
// down.
var restClient = &http.Client{Timeout: 5 * time.Second}

func getJSON(ctx context.Context, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := restClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// state is the cluster as the first live member answering reports it.
func (c *cluster) state(ctx context.Context) (clusterState, error) {
	var s clusterState
	err := errors.New("no live member")
	for _, n := range c.nodes {
		if n.patroni == nil {
			continue
		}
		if err = getJSON(ctx, fmt.Sprintf("http://127.0.0.1:%d/cluster", n.restPort), &s); err == nil {
			return s, nil
		}
	}
	return s, err
}

// waitFor waits until the cluster's state satisfies ok, or fails the test.
func (c *cluster) waitFor(ctx context.Context, within time.Duration, what string, ok func(clusterState) bool) {
	c.t.Helper()
	c.waitUntil(ctx, within, what, func() bool {
		s, err := c.state(ctx)
		return err == nil && ok(s)
	})
}

// waitUntil checks cond until it holds (testdb.Within), or fails the test
// saying what it waited for and what the cluster looked like; at once if
// etcd or a Patroni the test did not kill has exited.
func (c *cluster) waitUntil(ctx context.Context, within time.Duration, what string, cond func() bool) {
	c.t.Helper()
	var met bool
	testdb.Within(within, func() bool {
		if met = cond(); met {
			return true
		}
		for _, n := range c.nodes {
			if n.patroni != nil && n.patroni.exited() {
				c.t.Fatalf("%s: %s's Patroni exited (its log follows)", what, n.name)
			}
		}
		if c.etcd.exited() {
			c.t.Fatalf("%s: etcd exited (its log follows)", what)
		}
		return ctx.Err() != nil
	})
	if !met {
		s, err := c.state(context.Background())
		c.t.Fatalf("%s: not within %s (cluster: %v %v)", what, within, s, err)
	}
}

// switchover asks the leader to hand over to candidate, as
// `patronictl switchover --leader L --candidate C --force` does. Patroni
// answers once the candidate leads or the attempt failed, or after 20s
// that it does not know yet (the caller waits for the new leader anyway).
func (c *cluster) switchover(ctx context.Context, leader, candidate string) {
	c.t.Helper()
	body, _ := json.Marshal(map[string]string{"leader": leader, "candidate": candidate})
	url := fmt.Sprintf("http://127.0.0.1:%d/switchover", c.node(leader).restPort)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	// Patroni polls for the result for up to about half a minute.
	resp, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
	if err != nil {
		c.t.Fatalf("switchover %s → %s: %v", leader, candidate, err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusServiceUnavailable && bytes.Contains(answer, []byte("status unknown")) {
		c.t.Logf("switchover %s → %s: Patroni says %q; waiting for the new leader", leader, candidate, answer)
		return
	}
	if resp.StatusCode != http.StatusOK {
		c.t.Fatalf("switchover %s → %s: %s: %s", leader, candidate, resp.Status, answer)
	}
}
