package lockdb

import "errors"

// What a database error means; store.Interpret maps a driver error to one of
// these and keeps the driver's error wrapped for detail. Locker documents
// each one; the messages are what a user reads.
var (
	ErrNotMigrated      = errors.New("lock tables missing or not migrated: run `lockctl migrate` on this database (or grant this role USAGE on their schema)")
	ErrReadOnly         = errors.New("database is read-only (a standby or a read-only transaction): writes are refused")
	ErrPermissionDenied = errors.New("permission denied: this role lacks a grant lockctl needs (see docs/security.md, Least privilege)")
	ErrLockTimeout      = errors.New("timed out waiting for a database lock")
	ErrStatementTimeout = errors.New("statement cancelled (statement_timeout or cancel request)")
	ErrUnavailable      = errors.New("database unreachable")
	ErrInvalidValue     = errors.New("value rejected by the schema's checks")
	// ErrCannotAdopt: migrate found a distributed_lock it does not adopt
	// (the reference service's table, unless the caller asked to adopt it; a
	// shape it does not know; or rows that break lockctl's rules) and
	// changed nothing. The driver error's message says which, naming rows.
	ErrCannotAdopt = errors.New("migrate refused: the existing distributed_lock table cannot be adopted as it is")
	// ErrSchemaNewer: the database was migrated by a newer lockctl (it
	// records a migration this binary does not have). Migrate refuses it
	// rather than re-create older functions over the newer ones.
	ErrSchemaNewer = errors.New("the lock schema is newer than this lockctl: it was migrated by a newer version; upgrade lockctl (or the service) instead")
	// ErrSchemaUnknown: the lock schema records migrations this lockctl
	// did not make as it has them (another build's, or a build's before
	// migrations were recorded with their checksums), so it cannot tell
	// which tables and functions the schema holds. Migrate refuses it and
	// changes nothing; the driver error's message says what was found and
	// what to do.
	ErrSchemaUnknown = errors.New("the lock schema was not made by this lockctl's migrations, and cannot be migrated in place")
	// ErrSchemaOpen: roles other than the lock tables' owner may create
	// objects in the lock schema, or own functions or operators there, and
	// what they make could run inside the protocol as that owner. Migrate
	// and grant refuse it and change nothing; the driver error's message
	// names each role and object with what to run.
	ErrSchemaOpen = errors.New("refused: the lock schema is open to other roles, whose functions or operators there could run inside the protocol as the lock tables' owner (see docs/security.md, The lock schema)")
	// ErrPoolerStatements and ErrPoolerStartupParameter: a connection
	// pooler lockctl cannot work through as configured; each says what to
	// change.
	ErrPoolerStatements       = errors.New("a connection pooler lost this connection's prepared statements (transaction pooling, e.g. PgBouncer before 1.21 or with max_prepared_statements = 0): add default_query_exec_mode=exec to the connection string (see docs/pooling.md)")
	ErrPoolerStartupParameter = errors.New("the connection pooler refuses a startup parameter of the connection string: drop it; to choose the lock schema, set the role's search_path with ALTER ROLE … SET search_path (see docs/pooling.md)")
)

// Meanings lists the errors above, most specific first: the order in which
// to ask errors.Is of an error that may wrap more than one.
var Meanings = []error{
	ErrNotMigrated, ErrCannotAdopt, ErrSchemaNewer, ErrSchemaUnknown, ErrSchemaOpen, ErrReadOnly, ErrPermissionDenied, ErrLockTimeout,
	ErrStatementTimeout, ErrUnavailable, ErrInvalidValue,
	ErrPoolerStatements, ErrPoolerStartupParameter,
}
