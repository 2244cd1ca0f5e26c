package pgtemp

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// ErrNoJDBC means the PostgreSQL JDBC driver was not found. Its message says
// what to install.
var ErrNoJDBC = errors.New("pgtemp: no PostgreSQL JDBC driver found (looked at $PGJDBC_JAR and /usr/share/java/postgresql.jar); install it, e.g. `apt-get install libpostgresql-jdbc-java`, or set PGJDBC_JAR to the jar")

// ErrNoJava means javac or java was not found. Its message says what to
// install.
var ErrNoJava = errors.New("pgtemp: no Java compiler found (looked at $JAVA_HOME/bin and PATH); install a JDK (17 or later), e.g. `apt-get install default-jdk-headless`")

// jdbcJars are where distributions put the driver: Debian and Ubuntu's
// libpostgresql-jdbc-java, then Fedora's postgresql-jdbc. A variable so a
// test can empty it.
var jdbcJars = []string{"/usr/share/java/postgresql.jar", "/usr/share/java/postgresql-jdbc.jar"}

// JDBCJar returns the path of the PostgreSQL JDBC driver jar, for the
// classpath of a Java client a test compiles and runs: $PGJDBC_JAR, else the
// distribution's copy.
func JDBCJar() (string, error) {
	if p := os.Getenv("PGJDBC_JAR"); p != "" {
		if !isFile(p) {
			return "", fmt.Errorf("pgtemp: PGJDBC_JAR=%s is not a file: %w", p, ErrNoJDBC)
		}
		return p, nil
	}
	for _, p := range jdbcJars {
		if isFile(p) {
			return p, nil
		}
	}
	return "", ErrNoJDBC
}

// FindJava returns the javac and java programs of one JDK: $JAVA_HOME/bin
// if set, else javac from PATH and the java beside it (PATH may mix JDKs).
func FindJava() (javac, java string, err error) {
	if home := os.Getenv("JAVA_HOME"); home != "" {
		javac, java = filepath.Join(home, "bin", "javac"), filepath.Join(home, "bin", "java")
		for _, p := range []string{javac, java} {
			if !isFile(p) {
				return "", "", fmt.Errorf("pgtemp: JAVA_HOME=%s has no %s: %w", home, filepath.Base(p), ErrNoJava)
			}
		}
		return javac, java, nil
	}
	if javac, err = exec.LookPath("javac"); err != nil {
		return "", "", ErrNoJava
	}
	if real, err := filepath.EvalSymlinks(javac); err == nil {
		beside := filepath.Join(filepath.Dir(real), "java")
		if isFile(beside) {
			return javac, beside, nil
		}
	}
	if java, err = exec.LookPath("java"); err != nil {
		return "", "", ErrNoJava
	}
	return javac, java, nil
}
