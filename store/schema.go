package store

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
)

// The schema, as every program linking this package applies it (a service
// through locker, the CLI, the tests): numbered migrations, each applied once
// and recorded in distributed_lock_migration, then the functions, re-created
// on every migrate. The root schema.sql is generated from these files
// (`go generate ./store`) for psql users.
//
//go:generate go run ./internal/genschema ../schema.sql
//go:embed sql/migrations/*.sql sql/functions/*.sql sql/adopt/*.sql sql/guard/*.sql
var sqlFiles embed.FS

// Migration is one numbered step of the schema, from
// sql/migrations/NNN_name.sql.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// adoptVersion is the migration that makes distributed_lock: on a database
// that holds the reference service's table it runs between the two parts of
// the adoption (sql/adopt), which bring that table to the migration's shape.
const adoptVersion = 1

var (
	migrations = loadMigrations()
	// functionsSQL is every file of sql/functions, in name order: the
	// rules before the functions that inline them, the grants last.
	functionsSQL = strings.Join(readDir("sql/functions"), "\n")
	adoptSQL     = readDir("sql/adopt") // set aside, copy in
	// lockSchemaGuardSQL refuses a lock schema where code another role
	// makes could run inside the protocol (LKA03, lockdb.ErrSchemaOpen).
	lockSchemaGuardSQL = readFile("sql/guard/lock_schema.sql")
)

// Migrations are the schema's migrations, in version order.
func Migrations() []Migration { return slices.Clone(migrations) }

// LatestVersion is the highest migration version this package has.
func LatestVersion() int { return migrations[len(migrations)-1].Version }

func loadMigrations() []Migration {
	entries, err := fs.ReadDir(sqlFiles, "sql/migrations")
	if err != nil {
		panic(err)
	}
	var ms []Migration
	for _, e := range entries {
		base := strings.TrimSuffix(e.Name(), ".sql")
		num, name, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || len(num) != 3 {
			panic(fmt.Sprintf("store: migration file %s is not NNN_name.sql", e.Name()))
		}
		if want := len(ms) + 1; v != want {
			panic(fmt.Sprintf("store: migration file %s: version %d, want %d (no gaps)", e.Name(), v, want))
		}
		ms = append(ms, Migration{Version: v, Name: name, SQL: readFile("sql/migrations/" + e.Name())})
	}
	return ms
}

// readDir is the text of every file of dir, in name order.
func readDir(dir string) []string {
	entries, err := fs.ReadDir(sqlFiles, dir)
	if err != nil {
		panic(err)
	}
	texts := make([]string, len(entries))
	for i, e := range entries {
		texts[i] = readFile(path.Join(dir, e.Name()))
	}
	return texts
}

func readFile(name string) string {
	b, err := sqlFiles.ReadFile(name)
	if err != nil {
		panic(err)
	}
	return string(b)
}
