package queue

import (
	"errors"
	"strings"
	"testing"
)

func TestFlowPlan(t *testing.T) {
	t.Parallel()
	node := func(n string) FlowNode { return FlowNode{Name: n, Job: JobSpec{Queue: "q", Kind: "k"}} }
	cases := []struct {
		name  string
		flow  FlowSpec
		order string // node names in plan order, or the error's field and rule
	}{
		{"given order kept", FlowSpec{Nodes: []FlowNode{node("a"), node("b"), node("c")}}, "a b c"},
		{"parents first", FlowSpec{Nodes: []FlowNode{node("sum"), node("x"), node("y")},
			Edges: []FlowEdge{{Parent: "x", Child: "sum"}, {Parent: "y", Child: "sum"}}}, "x y sum"},
		{"chain backwards", FlowSpec{Nodes: []FlowNode{node("c"), node("b"), node("a")},
			Edges: []FlowEdge{{Parent: "a", Child: "b"}, {Parent: "b", Child: "c"}}}, "a b c"},
		{"repeated edge", FlowSpec{Nodes: []FlowNode{node("a"), node("b")},
			Edges: []FlowEdge{{Parent: "a", Child: "b"}, {Parent: "a", Child: "b"}}}, "a b"},
		{"cycle", FlowSpec{Nodes: []FlowNode{node("a"), node("b"), node("c")},
			Edges: []FlowEdge{{Parent: "a", Child: "b"}, {Parent: "b", Child: "c"}, {Parent: "c", Child: "a"}}},
			"edges[0].FlowEdge.Child makes a cycle: b → c → a → b"},
		{"empty name", FlowSpec{Nodes: []FlowNode{{Job: JobSpec{Queue: "q", Kind: "k"}}}}, "nodes[0].FlowNode.Name must not be empty"},
		{"bad policy", FlowSpec{Nodes: []FlowNode{{Name: "a", Job: JobSpec{Queue: "q", Kind: "k", OnParentFailure: "later"}}}},
			`nodes[0].JobSpec.OnParentFailure must be "cancel" or "run", got "later"`},
		{"twice the same parent", FlowSpec{Nodes: []FlowNode{{Name: "a", Job: JobSpec{Queue: "q", Kind: "k", DependsOn: []string{"1", "1"}}}}},
			`nodes[0].JobSpec.DependsOn lists job "1" twice`},
	}
	for _, c := range cases {
		p, err := c.flow.Plan(0)
		var got string
		if err != nil {
			var ia *InvalidArgumentError
			if !errors.As(err, &ia) {
				t.Fatalf("%s: error %v is not an *InvalidArgumentError", c.name, err)
			}
			got = ia.Field + " " + ia.Rule
		} else {
			names := make([]string, len(p.Nodes))
			for i, n := range p.Nodes {
				names[i] = n.Name
				for _, par := range n.Parents {
					if par >= i {
						t.Errorf("%s: node %s has parent %d, not before it", c.name, n.Name, par)
					}
				}
			}
			got = strings.Join(names, " ")
		}
		if got != c.order {
			t.Errorf("%s: got %q, want %q", c.name, got, c.order)
		}
	}
}
