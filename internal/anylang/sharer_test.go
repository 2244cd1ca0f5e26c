package anylang

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/lockctl/lockctl/internal/history"
)

// sharer is Share.java running: its reader takes commands on stdin and
// answers on stdout, where the permit threads' operations follow at the
// end.
type sharer struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr bytes.Buffer
}

// startSharer starts Share.java with args and waits for its "ready".
func startSharer(t *testing.T, ctx context.Context, client javaClient, args ...string) *sharer {
	t.Helper()
	return startJava(t, ctx, client, "Share", args...)
}

// startJava starts the Java program class (Share, Elect) with args, which
// takes commands on stdin, and waits for its "ready".
func startJava(t *testing.T, ctx context.Context, client javaClient, class string, args ...string) *sharer {
	t.Helper()
	s := &sharer{t: t, cmd: exec.CommandContext(ctx, client.java, append([]string{"-cp", client.classpath, class}, args...)...)}
	s.cmd.Stderr = &s.stderr
	var err error
	if s.in, err = s.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = s.in.Close()
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
	})
	s.out = bufio.NewReader(stdout)
	if f := s.line(); len(f) != 1 || f[0] != "ready" {
		t.Fatalf("%s.java did not start: %q", class, f)
	}
	return s
}

// line is the next line Share.java printed, split at spaces.
func (s *sharer) line() []string {
	s.t.Helper()
	line, err := s.out.ReadString('\n')
	if err != nil {
		s.fail("Share.java: %q, %v", line, err)
	}
	return strings.Fields(line)
}

func (s *sharer) send(command string) {
	s.t.Helper()
	if _, err := io.WriteString(s.in, command+"\n"); err != nil {
		s.fail("Share.java: send %q: %v", command, err)
	}
}

// fail ends the test, and Share.java, with what it wrote to stderr.
func (s *sharer) fail(format string, args ...any) {
	s.t.Helper()
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.t.Fatalf(format+":\n%s", append(args, s.stderr.String())...)
}

func (s *sharer) int(field string) int64 {
	s.t.Helper()
	n, err := strconv.ParseInt(field, 10, 64)
	if err != nil {
		s.t.Fatalf("Share.java printed %q for a number", field)
	}
	return n
}

// finish waits for Share.java to end and returns its permit threads'
// operations on clock.
func (s *sharer) finish(clock wallClock) []history.Op {
	s.t.Helper()
	_ = s.in.Close()
	rest, err := io.ReadAll(s.out)
	if err != nil {
		s.t.Fatal(err)
	}
	if err := s.cmd.Wait(); err != nil {
		s.t.Fatalf("Share.java failed: %v\n%s", err, s.stderr.String())
	}
	ops, err := parseJavaOps(rest, clock)
	if err != nil {
		s.t.Fatal(err)
	}
	return ops
}
