package patroni_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/pgtemp"
	"github.com/lockctl/lockctl/internal/testdb"
)

// dirPrefix names the test's temporary directory; the test's pid follows,
// so a later run can tell a killed run's leftovers (removeStale).
const dirPrefix = "lockctl-patroni-"

// cluster is etcd and the Patroni nodes around it, all in dir, all run as
// acct.
type cluster struct {
	t      *testing.T
	dir    string
	acct   pgtemp.Account
	binDir string // PostgreSQL's
	etcd   *process
	// etcdPort serves etcd's clients (Patroni); etcd's peer port is only
	// its own.
	etcdPort int
	nodes    []*node
}

// node is one Patroni member and the PostgreSQL it runs.
type node struct {
	name     string
	pgPort   int
	restPort int
	dir      string
	patroni  *process // nil once killed
}

// process is a program the test started, and its log.
type process struct {
	cmd  *exec.Cmd
	done chan struct{}
	log  string
}

// programs is what the test runs, so a machine without one of them skips
// (or, under CI=true, fails) naming the package to install.
func programs(t *testing.T) (binDir string) {
	t.Helper()
	for _, name := range []string{"etcd", "patroni"} {
		if _, err := exec.LookPath(name); err != nil {
			testdb.Unavailable(t, "%s not found: the Patroni test needs `apt-get install patroni etcd-server` (Debian: patroni 3.0.2, etcd 3.4)", name)
		}
	}
	binDir, err := pgtemp.FindBinDir()
	if err != nil {
		testdb.Unavailable(t, "%v", err)
	}
	// Patroni runs more of PostgreSQL's programs than pgtemp looks for
	// (pg_controldata, pg_basebackup), all from one directory: the one
	// the server binary really lives in, not a directory of links to it.
	if real, err := filepath.EvalSymlinks(filepath.Join(binDir, "postgres")); err == nil {
		binDir = filepath.Dir(real)
	}
	for _, name := range []string{"pg_ctl", "pg_controldata", "pg_basebackup"} {
		if _, err := os.Stat(filepath.Join(binDir, name)); err != nil {
			testdb.Unavailable(t, "%s has no %s, which Patroni runs", binDir, name)
		}
	}
	return binDir
}

// startCluster starts etcd and then len(names) Patroni nodes, the first
// one first so that it bootstraps the cluster, and waits until it has a
// leader and a synchronous standby for each other node. Cleanup kills
// every process it started, PostgreSQL included, and removes its
// directory.
func startCluster(ctx context.Context, t *testing.T, names ...string) *cluster {
	t.Helper()
	binDir := programs(t)
	acct, err := pgtemp.AccountFor("")
	if err != nil {
		testdb.Unavailable(t, "%v", err)
	}
	removeStale()
	dir, err := acct.MkdirTemp(dirPrefix + strconv.Itoa(os.Getpid()) + "-")
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, dir: dir, acct: acct, binDir: binDir}
	t.Cleanup(c.close)
	c.startEtcd(ctx)
	for i, name := range names {
		n := &node{name: name, pgPort: freePort(t), restPort: freePort(t), dir: filepath.Join(dir, name)}
		c.nodes = append(c.nodes, n)
		c.startNode(n)
		if i == 0 {
			c.waitFor(ctx, 90*time.Second, name+" leading the new cluster", func(s clusterState) bool { return s.leader() == name })
		}
	}
	c.waitFor(ctx, 90*time.Second, "a leader and a synchronous standby for each other node", func(s clusterState) bool {
		return s.leader() != "" && len(s.syncStandbys()) == len(names)-1
	})
	return c
}

func freePort(t *testing.T) int {
	t.Helper()
	port, err := pgtemp.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// start runs a program as the cluster's account in a process group of its
// own, its output in a log file in dir; the kernel kills it if the test
// process dies first.
func (c *cluster) start(logName string, name string, args ...string) *process {
	c.t.Helper()
	p := &process{log: filepath.Join(c.dir, logName), done: make(chan struct{})}
	logFile, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		c.t.Fatal(err)
	}
	defer logFile.Close()
	p.cmd = exec.Command(name, args...)
	p.cmd.Dir = c.dir
	// HOME for Python's and etcd's own files; the locale for initdb.
	p.cmd.Env = append(os.Environ(), "HOME="+c.dir, "LC_ALL=C", "PGAPPNAME=")
	p.cmd.SysProcAttr = c.acct.ProcAttr()
	p.cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	if err := p.cmd.Start(); err != nil {
		c.t.Fatalf("start %s: %v", name, err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	return p
}

// exited says whether the program has ended.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// kill ends a program and everything in its process group at once.
func (p *process) kill() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

func (c *cluster) startEtcd(ctx context.Context) {
	c.t.Helper()
	c.etcdPort = freePort(c.t)
	clientURL := fmt.Sprintf("http://127.0.0.1:%d", c.etcdPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", freePort(c.t))
	c.etcd = c.start("etcd.log", "etcd", "--name", "lockctl", "--data-dir", filepath.Join(c.dir, "etcd"),
		"--listen-client-urls", clientURL, "--advertise-client-urls", clientURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "lockctl="+peerURL)
	c.waitUntil(ctx, 30*time.Second, "etcd answering", func() bool {
		var health struct{ Health string }
		return getJSON(ctx, clientURL+"/health", &health) == nil && health.Health == "true"
	})
}

func (c *cluster) startNode(n *node) {
	c.t.Helper()
	if err := os.Mkdir(n.dir, 0o700); err != nil {
		c.t.Fatal(err)
	}
	config := filepath.Join(c.dir, n.name+".yml")
	if err := os.WriteFile(config, []byte(c.nodeConfig(n)), 0o644); err != nil {
		c.t.Fatal(err)
	}
	if err := c.acct.Chown(n.dir); err != nil {
		c.t.Fatal(err)
	}
	n.patroni = c.start(n.name+".log", "patroni", config)
}

// nodeConfig is a member's Patroni configuration. The cluster runs in
// synchronous mode, so an acknowledged commit (a release, a grant) is on
// the standby a failover promotes. ttl, loop_wait and retry_timeout are
// Patroni's smallest sensible ones, so a failover takes seconds.
func (c *cluster) nodeConfig(n *node) string {
	return fmt.Sprintf(`scope: lockctl
name: %[1]s
restapi:
  listen: 127.0.0.1:%[3]d
  connect_address: 127.0.0.1:%[3]d
etcd3:
  hosts: 127.0.0.1:%[4]d
bootstrap:
  dcs:
    ttl: 10
    loop_wait: 1
    retry_timeout: 3
    maximum_lag_on_failover: 1073741824
    synchronous_mode: true
    postgresql:
      use_pg_rewind: false
      parameters:
        wal_level: replica
        hot_standby: "on"
        max_wal_senders: 5
        max_replication_slots: 5
  initdb: [{encoding: UTF8}, {locale: C}, {auth: trust}]
  pg_hba:
    - local all all trust
    - host all all 127.0.0.1/32 trust
    - host replication all 127.0.0.1/32 trust
postgresql:
  listen: 127.0.0.1:%[2]d
  connect_address: 127.0.0.1:%[2]d
  data_dir: %[5]s/data
  bin_dir: %[6]s
  pgpass: %[5]s/pgpass
  authentication:
    superuser: {username: postgres}
    replication: {username: postgres}
  parameters:
    unix_socket_directories: %[5]s
tags: {nofailover: false, noloadbalance: false, clonefrom: false}
`, n.name, n.pgPort, n.restPort, c.etcdPort, n.dir, c.binDir)
}

// node is the member called name.
func (c *cluster) node(name string) *node {
	for _, n := range c.nodes {
		if n.name == name {
			return n
		}
	}
	c.t.Fatalf("no node %q", name)
	return nil
}

// dsn reaches whichever node is primary: libpq's multi-host form, as a
// service behind Patroni without a proxy would connect.
func (c *cluster) dsn() string {
	hosts := make([]string, len(c.nodes))
	ports := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		hosts[i], ports[i] = "127.0.0.1", strconv.Itoa(n.pgPort)
	}
	return fmt.Sprintf("host=%s port=%s user=postgres dbname=postgres sslmode=disable target_session_attrs=read-write connect_timeout=3",
		strings.Join(hosts, ","), strings.Join(ports, ","))
}

// crash kills a node's Patroni and then its PostgreSQL, as a machine
// failure would: nothing is shut down, the leader key stays in etcd until
// its ttl runs out.
func (c *cluster) crash(n *node) {
	c.t.Helper()
	n.patroni.kill()
	n.patroni = nil
	killPostmaster(filepath.Join(n.dir, "data"), syscall.SIGKILL)
}

// killPostmaster signals the PostgreSQL whose data directory is dataDir.
// Patroni starts it in a session of its own (so that it outlives a Patroni
// restart), so only its postmaster.pid leads to it; the pid is signalled
// only while its command line still names dataDir. Its backends exit when
// they see it gone.
func killPostmaster(dataDir string, sig syscall.Signal) {
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil || pid <= 0 {
		return
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !strings.Contains(string(cmdline), dataDir) {
		return
	}
	_ = syscall.Kill(pid, sig)
	if !testdb.Within(5*time.Second, func() bool { return syscall.Kill(pid, 0) != nil }) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// close kills every process the cluster started and removes its directory
// (kept, with its logs, when the test failed and LOCKCTL_KEEP is set).
func (c *cluster) close() {
	for _, n := range c.nodes {
		if n.patroni != nil {
			n.patroni.kill()
		}
		// An immediate shutdown: the postmaster takes its backends with it.
		killPostmaster(filepath.Join(n.dir, "data"), syscall.SIGQUIT)
	}
	if c.etcd != nil {
		c.etcd.kill()
	}
	if c.t.Failed() {
		c.logTails()
		if os.Getenv("LOCKCTL_KEEP") != "" {
			c.t.Logf("kept %s", c.dir)
			return
		}
	}
	_ = os.RemoveAll(c.dir)
}

// logTails puts the end of every program's log into the test's output.
func (c *cluster) logTails() {
	logs, _ := filepath.Glob(filepath.Join(c.dir, "*.log"))
	for _, path := range logs {
		b, _ := os.ReadFile(path)
		if len(b) > 3000 {
			b = b[len(b)-3000:]
		}
		c.t.Logf("--- end of %s:\n%s", filepath.Base(path), b)
	}
}

// removeStale kills what a killed run of this test left behind (Patroni's
// PostgreSQL outlives the test process; etcd and Patroni do not) and
// removes its directory.
func removeStale() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	more, _ := filepath.Glob(filepath.Join("/tmp", dirPrefix+"*"))
	for _, dir := range append(dirs, more...) {
		rest := strings.TrimPrefix(filepath.Base(dir), dirPrefix)
		pid, err := strconv.Atoi(strings.SplitN(rest, "-", 2)[0])
		if err != nil || syscall.Kill(pid, 0) == nil {
			continue
		}
		datas, _ := filepath.Glob(filepath.Join(dir, "*", "data"))
		for _, data := range datas {
			killPostmaster(data, syscall.SIGQUIT)
		}
		_ = os.RemoveAll(dir)
	}
}
