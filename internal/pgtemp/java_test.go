package pgtemp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// probeJava prints, for each JDBC URL given, the port the server behind it
// reports.
const probeJava = `import java.sql.*;

public class Probe {
    public static void main(String[] urls) throws Exception {
        for (String url : urls) {
            try (Connection c = DriverManager.getConnection(url);
                 ResultSet r = c.createStatement().executeQuery("SELECT current_setting('port')")) {
                r.next();
                System.out.println(r.getString(1));
            }
        }
    }
}
`

func jdbcURL(port int) string {
	return fmt.Sprintf("jdbc:postgresql://127.0.0.1:%d/postgres?user=postgres&sslmode=disable", port)
}

// TestJavaClientConnects compiles and runs a JDBC client against a server,
// directly and through a transaction pooler (the JDBC driver sends
// extra_float_digits, which the pooler is set to ignore).
func TestJavaClientConnects(t *testing.T) {
	requireBouncer(t)
	javac, java, err := FindJava()
	if err != nil {
		unavailable(t, err)
	}
	jar, err := JDBCJar()
	if err != nil {
		unavailable(t, err)
	}
	up := startServer(t)
	b := startBouncer(t, up, BouncerOptions{})

	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "Probe.java"), []byte(probeJava), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(javac, "-cp", jar, "-d", dir, filepath.Join(dir, "Probe.java")).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, java, "-cp", jar+string(os.PathListSeparator)+dir, "Probe",
		jdbcURL(up.port), jdbcURL(b.Port())).CombinedOutput()
	if err != nil {
		t.Fatalf("java: %v\n%s", err, out)
	}
	want := strconv.Itoa(up.port) + "\n" + strconv.Itoa(up.port)
	if got := strings.TrimSpace(string(out)); got != want {
		t.Fatalf("the Java client printed %q; want the server's port twice (direct, pooled)", got)
	}
}

func TestMissingJavaSaysWhatToInstall(t *testing.T) {
	t.Setenv("PGJDBC_JAR", "")
	old := jdbcJars
	jdbcJars = nil
	t.Cleanup(func() { jdbcJars = old })
	if _, err := JDBCJar(); !errors.Is(err, ErrNoJDBC) || !strings.Contains(err.Error(), "libpostgresql-jdbc-java") {
		t.Fatalf("JDBCJar without the driver = %v, want ErrNoJDBC saying what to install", err)
	}
	t.Setenv("PGJDBC_JAR", filepath.Join(t.TempDir(), "missing.jar"))
	if _, err := JDBCJar(); !errors.Is(err, ErrNoJDBC) || !strings.Contains(err.Error(), "PGJDBC_JAR=") {
		t.Fatalf("a PGJDBC_JAR naming nothing = %v, want an error naming PGJDBC_JAR", err)
	}

	t.Setenv("JAVA_HOME", t.TempDir())
	if _, _, err := FindJava(); !errors.Is(err, ErrNoJava) || !strings.Contains(err.Error(), "JAVA_HOME=") {
		t.Fatalf("a JAVA_HOME without a JDK = %v, want an error naming JAVA_HOME", err)
	}
	t.Setenv("JAVA_HOME", "")
	t.Setenv("PATH", t.TempDir())
	if _, _, err := FindJava(); !errors.Is(err, ErrNoJava) || !strings.Contains(err.Error(), "install a JDK") {
		t.Fatalf("FindJava without a JDK = %v, want ErrNoJava saying what to install", err)
	}
}
