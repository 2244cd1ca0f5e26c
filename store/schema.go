package store

import _ "embed"

// The root schema.sql is the file people edit; this package embeds a copy
// so that every program linking it (a service through locker, the CLI, the
// tests) applies the schema it was built with. TestSchemaCopyIsCurrent fails
// when the copy is stale.
//
//go:generate cp ../schema.sql schema.sql

// Schema is the text of schema.sql: idempotent DDL that Migrate applies.
//
//go:embed schema.sql
var Schema string
