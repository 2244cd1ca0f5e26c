package anylang

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/lockctl/lockctl/internal/pgtemp"
	"github.com/lockctl/lockctl/internal/testdb"
)

// javaClient is the compiled Java client: the java program and the
// classpath (the JDBC driver and the compiled classes) to run it with.
type javaClient struct {
	java, classpath string
}

// The client is compiled once per test binary (javac takes seconds); its
// classes are removed by TestMain.
var (
	javaOnce    sync.Once
	javaBuilt   javaClient
	javaErr     error
	javaClasses string
)

// compileJava compiles testdata/java with javac against the PostgreSQL JDBC
// driver, warnings as errors. A missing JDK or driver skips the test, or
// fails it under CI=true.
func compileJava(t *testing.T) javaClient {
	t.Helper()
	javaOnce.Do(func() { javaBuilt, javaErr = buildJava() })
	if errors.Is(javaErr, pgtemp.ErrNoJava) || errors.Is(javaErr, pgtemp.ErrNoJDBC) {
		testdb.Unavailable(t, "%v", javaErr)
	}
	if javaErr != nil {
		t.Fatal(javaErr)
	}
	return javaBuilt
}

func buildJava() (javaClient, error) {
	javac, java, err := pgtemp.FindJava()
	if err != nil {
		return javaClient{}, err
	}
	jar, err := pgtemp.JDBCJar()
	if err != nil {
		return javaClient{}, err
	}
	sources, err := filepath.Glob(filepath.Join("testdata", "java", "*.java"))
	if err != nil || len(sources) == 0 {
		return javaClient{}, fmt.Errorf("no Java sources in testdata/java (%v)", err)
	}
	if javaClasses, err = os.MkdirTemp("", "lockctl-anylang-java-"); err != nil {
		return javaClient{}, err
	}
	args := append([]string{"-Xlint:all", "-Werror", "-cp", jar, "-d", javaClasses}, sources...)
	if out, err := exec.Command(javac, args...).CombinedOutput(); err != nil {
		return javaClient{}, fmt.Errorf("javac: %v\n%s", err, out)
	}
	return javaClient{java: java, classpath: jar + string(os.PathListSeparator) + javaClasses}, nil
}
