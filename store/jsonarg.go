package store

// jsonArg passes a JSON document as text, for a parameter the statement
// casts to jsonb. As []byte it would be sent as bytea in the query exec
// modes that do not ask the server for parameter types (exec,
// simple_protocol: the ones a transaction pooler needs), and jsonb rejects
// bytea's '\x…' text. nil stays SQL NULL.
func jsonArg(doc []byte) any {
	if doc == nil {
		return nil
	}
	return string(doc)
}
