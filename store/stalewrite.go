package store

import (
	"context"
	"encoding/json"
)

// staleWriteSQL calls distributed_lock_report_stale_write (schema.sql).
const staleWriteSQL = `SELECT distributed_lock_report_stale_write($1, $2, $3, $4, $5::jsonb)`

// RecordStaleWrite logs that a write fenced with ref's token was refused.
func RecordStaleWrite(ctx context.Context, db DBTX, ref LeaseRef, actor string, detail map[string]any) error {
	doc, err := json.Marshal(orEmpty(detail))
	if err != nil {
		return err
	}
	_, err = db.Exec(ctx, staleWriteSQL, ref.Key, ref.Owner, ref.Token, actor, jsonArg(doc))
	return Interpret(err)
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}
