package store

import (
	"context"
	"fmt"
	"slices"
)

// MigrationStatus is where a database stands against this package's
// migrations.
type MigrationStatus struct {
	// Applied is the highest version the database records (0: none).
	Applied int
	// Available is the highest version this package has.
	Available int
	// Pending are the migrations a Migrate would apply, in order.
	Pending []Migration
	// Adopts: the first pending migration would adopt the reference
	// service's table (ShapeReference), if MigrateOptions.AdoptReference allows.
	Adopts bool
}

// Newer reports whether the database was migrated by a newer lockctl.
func (s MigrationStatus) Newer() bool { return s.Applied > s.Available }

// Status reads which migrations db records and which this package would
// apply; it changes nothing. A newer schema is reported (Newer), not
// refused; one whose recorded migrations are another build's is refused
// (lockdb.ErrSchemaUnknown), as Migrate would.
func Status(ctx context.Context, db DBTX) (MigrationStatus, error) {
	return status(ctx, db, migrations)
}

func status(ctx context.Context, db DBTX, ms []Migration) (MigrationStatus, error) {
	if _, err := db.Exec(ctx, checksumGuardSQL(ms)); err != nil {
		return MigrationStatus{}, fmt.Errorf("store: migration status: %w", Interpret(err))
	}
	applied, err := readApplied(ctx, db)
	if err != nil {
		return MigrationStatus{}, fmt.Errorf("store: migration status: %w", Interpret(err))
	}
	s := MigrationStatus{Available: ms[len(ms)-1].Version}
	if len(applied) > 0 {
		s.Applied = applied[len(applied)-1]
	}
	for _, m := range ms {
		if !slices.Contains(applied, m.Version) {
			s.Pending = append(s.Pending, m)
		}
	}
	if len(s.Pending) > 0 && s.Pending[0].Version == adoptVersion {
		shape, err := TableShape(ctx, db)
		if err != nil {
			return MigrationStatus{}, err
		}
		s.Adopts = shape == ShapeReference
	}
	return s, nil
}
