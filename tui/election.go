package tui

import "fmt"

// electionValue is the value a leader proclaimed on an election key
// (locker/election marks the key's metadata {"election": true, "value"}),
// and whether md is an election key's.
func electionValue(md map[string]any) (string, bool) {
	if md["election"] != true {
		return "", false
	}
	v, ok := md["value"].(string)
	if !ok {
		v = fmt.Sprint(md["value"])
	}
	return v, true
}
