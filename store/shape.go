package store

import (
	"context"
	"fmt"
)

// Shape is what kind of distributed_lock table a database holds.
type Shape string

const (
	// ShapeMissing: no distributed_lock is visible on the search_path.
	ShapeMissing Shape = "missing"
	// ShapeLockctl: the table schema.sql makes.
	ShapeLockctl Shape = "lockctl"
	// ShapeReference: a table without lockctl's columns, such as the one the
	// reference service made (lock_key, owner_id, fence_token, expires_at):
	// lockctl can show it but not write it; Migrate adopts it.
	ShapeReference Shape = "reference"
)

// tableShapeSQL reads the shape from the catalog: $1 is the table's name,
// resolved through search_path like every other statement; lockctl's table
// is the one with a ttl column.
const tableShapeSQL = `
SELECT CASE
    WHEN to_regclass($1) IS NULL THEN 'missing'
    WHEN EXISTS (SELECT 1 FROM pg_attribute
                 WHERE attrelid = to_regclass($1) AND attname = $2 AND NOT attisdropped) THEN 'lockctl'
    ELSE 'reference' END`

// TableShape tells which shape of distributed_lock db sees. A reader that
// polls asks it on each poll until it sees lockctl's table (and again after
// losing its connection), so that a table migrated meanwhile is read as
// lockctl's; a migrated table never turns back into a reference one.
func TableShape(ctx context.Context, db DBTX) (Shape, error) {
	var s Shape
	if err := db.QueryRow(ctx, tableShapeSQL, "distributed_lock", "ttl").Scan(&s); err != nil {
		return "", fmt.Errorf("store: table shape: %w", Interpret(err))
	}
	return s, nil
}
