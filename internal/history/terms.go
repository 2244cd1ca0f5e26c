package history

import "fmt"

// CheckTerms checks what an election's observer reported, in order: each
// term larger than the one before (a term never goes back), and each one
// granted on the election's key (an event of the log with that token), so
// an observer never reports a leader nobody was elected.
func CheckTerms(observer, key string, terms []int64, obs Observed) []string {
	granted := map[int64]bool{}
	for _, e := range obs.Events {
		if e.Key == key && e.Token != nil {
			granted[*e.Token] = true
		}
	}
	var violations []string
	for i, term := range terms {
		if i > 0 && term <= terms[i-1] {
			violations = append(violations, fmt.Sprintf("%s: observer %s reported term %d after term %d", key, observer, term, terms[i-1]))
		}
		if !granted[term] {
			violations = append(violations, fmt.Sprintf("%s: observer %s reported term %d, which no grant on the key has", key, observer, term))
		}
	}
	return violations
}
