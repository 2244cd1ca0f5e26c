package testdb

import (
	"encoding/json"
	"fmt"
)

// PlanNode is one node of an EXPLAIN (ANALYZE, FORMAT JSON) plan, with the
// fields the plan tests read.
type PlanNode struct {
	Type       string     `json:"Node Type"`
	Relation   string     `json:"Relation Name"`
	Rows       float64    `json:"Actual Rows"` // per loop
	Loops      float64    `json:"Actual Loops"`
	SortMethod string     `json:"Sort Method"`
	Plans      []PlanNode `json:"Plans"`
}

// ParsePlan reads the top node of an EXPLAIN (FORMAT JSON) result.
func ParsePlan(explained string) (PlanNode, error) {
	var doc []struct{ Plan PlanNode }
	if err := json.Unmarshal([]byte(explained), &doc); err != nil || len(doc) == 0 {
		return PlanNode{}, fmt.Errorf("not an EXPLAIN (FORMAT JSON) result: %v", err)
	}
	return doc[0].Plan, nil
}

// Walk calls f on n and on every node below it.
func (n PlanNode) Walk(f func(PlanNode)) {
	f(n)
	for _, c := range n.Plans {
		c.Walk(f)
	}
}
