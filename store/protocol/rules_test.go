package protocol_test

// ruleCall evaluates a rule on the key's row as a protocol function does:
// expr reads the row as l and the call's now as c.ts; args follow the key
// as $2, $3, …. A rule reads and writes nothing else, so every case wants
// the row untouched.
func ruleCall(expr string, args ...any) func(string, prepared) (string, []any) {
	return func(key string, _ prepared) (string, []any) {
		return `SELECT ` + expr + ` AS result
			FROM distributed_lock l, (SELECT clock_timestamp() AS ts) c WHERE l.lock_key = $1 AND l.slot = 0`,
			append([]any{key}, args...)
	}
}

// is: the rule answers v and changes nothing.
func is(v any) want { return want{value: v, row: untouched} }

// isQueued is is for a state with waiters, which stay.
func isQueued(v any, owners ...string) want {
	w := is(v)
	w.waiters = waiters(owners...)
	return w
}

// slotRuleCall is ruleCall on the key's n-th holder's slot (its row at
// slot n) rather than the key's row.
func slotRuleCall(n int, expr string, args ...any) func(string, prepared) (string, []any) {
	return func(key string, _ prepared) (string, []any) {
		return `SELECT ` + expr + ` AS result
			FROM distributed_lock l, (SELECT clock_timestamp() AS ts) c WHERE l.lock_key = $1 AND l.slot = $2`,
			append([]any{key, n}, args...)
	}
}
