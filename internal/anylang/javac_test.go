package anylang

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/lockctl/lockctl/internal/pgtemp"
	"github.com/lockctl/lockctl/internal/testdb"
)

// javaClient is the compiled Java client: the java program and the
// classpath (the JDBC driver and the compiled classes) to run it with.
type javaClient struct {
	java, classpath string
}

// compileJava compiles testdata/java with javac against the PostgreSQL JDBC
// driver, warnings as errors. A missing JDK or driver skips the test, or
// fails it under CI=true.
func compileJava(t *testing.T) javaClient {
	t.Helper()
	javac, java, err := pgtemp.FindJava()
	if err != nil {
		testdb.Unavailable(t, "%v", err)
	}
	jar, err := pgtemp.JDBCJar()
	if err != nil {
		testdb.Unavailable(t, "%v", err)
	}
	sources, err := filepath.Glob(filepath.Join("testdata", "java", "*.java"))
	if err != nil || len(sources) == 0 {
		t.Fatalf("no Java sources in testdata/java (%v)", err)
	}
	classes := t.TempDir()
	args := append([]string{"-Xlint:all", "-Werror", "-cp", jar, "-d", classes}, sources...)
	if out, err := exec.Command(javac, args...).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	return javaClient{java: java, classpath: jar + string(os.PathListSeparator) + classes}
}
