package store

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// A migration is recorded with the checksum of the text that applied it,
// so a schema made by another build of a migration (one edited before it
// was released, or a fork's) is told apart from this build's, rather than
// met later as a missing column in the middle of a migrate.

// unknownSQLState is what the checksum guard raises on a schema this
// build cannot recognise (Interpret maps it to lockdb.ErrSchemaUnknown).
const unknownSQLState = "LKA04"

// Checksum is the SHA-256 of m's text, in hex: what distributed_lock_migration
// records for it.
func (m Migration) Checksum() string {
	sum := sha256.Sum256([]byte(m.SQL))
	return hex.EncodeToString(sum[:])
}

// checksumGuardSQL is a DO block that refuses (unknownSQLState) a lock
// schema whose recorded migrations are not ms as this build has them: one
// recorded with another checksum, or a migration table without checksums
// (made before they were recorded). It changes nothing, so migrate, its
// --status and schema.sql run it before anything else on the schema (after
// the lock schema's guard, which keeps others' operators out of it). Its
// text holds only this package's own constants (versions and hex
// checksums). A recorded migration this build does not have is the newer
// schema's refusal, not this one's.
func checksumGuardSQL(ms []Migration) string {
	rows := make([]string, len(ms))
	for i, m := range ms {
		rows[i] = fmt.Sprintf("(%d, '%s')", m.Version, m.Checksum())
	}
	return fmt.Sprintf(`DO $$
DECLARE
    found text;
BEGIN
    IF pg_catalog.to_regclass('distributed_lock_migration') IS NULL THEN
        RETURN;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_attribute a
                   WHERE a.attrelid = pg_catalog.to_regclass('distributed_lock_migration')
                     AND a.attname = 'checksum' AND NOT a.attisdropped) THEN
        RAISE EXCEPTION USING ERRCODE = '%[2]s', MESSAGE = %[3]s;
    END IF;
    SELECT pg_catalog.string_agg(pg_catalog.format('%%s (checksum %%s…, this build''s %%s…)',
               pg_catalog.lpad(m.version::text, 3, '0'), pg_catalog.left(m.checksum, 12),
               pg_catalog.left(b.checksum, 12)), ', ' ORDER BY m.version)
    INTO found
    FROM distributed_lock_migration m JOIN (VALUES %[1]s) b (version, checksum) ON b.version = m.version
    WHERE m.checksum IS DISTINCT FROM b.checksum;
    IF found IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = '%[2]s', MESSAGE = %[4]s || found;
    END IF;
END $$`, strings.Join(rows, ", "), unknownSQLState, quoteLiteral(unrecordedMessage), quoteLiteral(otherBuildMessage))
}

const (
	unrecordedMessage = "this lock schema was made by a lockctl that did not record what its migrations were " +
		"(a build before v0.1.0): this one cannot tell which tables and functions it holds, and changes nothing. " +
		"No released lockctl made it: once no lock is held, drop its lock tables and migrate again " +
		"(docs/operations.md, An unrecognised schema)"
	otherBuildMessage = "this lock schema's migrations were applied by another build of lockctl than this one, " +
		"so it cannot tell which tables and functions the schema holds, and changes nothing: migrate it with the " +
		"lockctl that made it, or, for a schema no released lockctl made, drop its lock tables once no lock is held " +
		"and migrate again (docs/operations.md, An unrecognised schema). Migrations recorded otherwise: "
)
