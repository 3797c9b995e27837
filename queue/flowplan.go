package queue

import (
	"strings"

	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/queuetype"
)

// Plan validates f and returns it as a backend stores it: every node's
// spec checked (ValidateSpec, with maxPayload) and given its defaults, the
// nodes in an order where each parent comes before its children (the
// given order where it already is). A bad flow returns an
// *InvalidArgumentError naming the field: nodes[i].FlowNode.Name,
// nodes[i].JobSpec.<field>, edges[i].FlowEdge.Parent or .Child (a name
// that is no node's, or an edge that closes a cycle, named in the rule).
func (f FlowSpec) Plan(maxPayload int) (backend.FlowPlan, error) {
	p := backend.FlowPlan{Name: f.Name}
	if err := queuetype.ValidName(Field("FlowSpec", "Name"), f.Name, false); err != nil {
		return p, err
	}
	if len(f.Nodes) == 0 {
		return p, queuetype.InvalidArgument(Field("FlowSpec", "Nodes"), "must hold at least one node")
	}
	if len(f.Nodes) > MaxFlowNodes {
		return p, queuetype.InvalidArgument(Field("FlowSpec", "Nodes"), "must hold at most %d nodes, got %d", MaxFlowNodes, len(f.Nodes))
	}
	index, err := f.nodeIndex(maxPayload)
	if err != nil {
		return p, err
	}
	parents, err := f.edgeParents(index)
	if err != nil {
		return p, err
	}
	order, err := f.topoOrder(parents)
	if err != nil {
		return p, err
	}
	pos := make([]int, len(f.Nodes))
	for k, i := range order {
		pos[i] = k
	}
	for _, i := range order {
		n := backend.PlannedNode{Name: f.Nodes[i].Name, Spec: specDefaults(f.Nodes[i].Job)}
		for _, par := range parents[i] {
			n.Parents = append(n.Parents, pos[par])
		}
		p.Nodes = append(p.Nodes, n)
	}
	return p, nil
}

// nodeIndex checks the nodes and maps their names to their indexes.
func (f FlowSpec) nodeIndex(maxPayload int) (map[string]int, error) {
	index := make(map[string]int, len(f.Nodes))
	for i, n := range f.Nodes {
		at := Field("FlowNode", "Name").At("nodes", i)
		if err := queuetype.ValidName(at, n.Name, true); err != nil {
			return nil, err
		}
		if j, dup := index[n.Name]; dup {
			return nil, queuetype.InvalidArgument(at, "must be unique in the flow: %q is also node %d", n.Name, j)
		}
		index[n.Name] = i
		if err := ValidateSpec(n.Job, maxPayload); err != nil {
			if ia, ok := err.(*InvalidArgumentError); ok {
				return nil, queuetype.InvalidArgument(ia.Path.At("nodes", i), "%s", ia.Rule)
			}
			return nil, err
		}
	}
	return index, nil
}

// edgeParents resolves the edges to each node's parents, by index.
func (f FlowSpec) edgeParents(index map[string]int) ([][]int, error) {
	parents := make([][]int, len(f.Nodes))
	seen := map[[2]int]bool{}
	for i, e := range f.Edges {
		par, ok := index[e.Parent]
		if !ok {
			return nil, queuetype.InvalidArgument(Field("FlowEdge", "Parent").At("edges", i), "names no node of the flow: %q", e.Parent)
		}
		child, ok := index[e.Child]
		if !ok {
			return nil, queuetype.InvalidArgument(Field("FlowEdge", "Child").At("edges", i), "names no node of the flow: %q", e.Child)
		}
		if par == child {
			return nil, queuetype.InvalidArgument(Field("FlowEdge", "Child").At("edges", i), "makes a cycle: %q depends on itself", e.Child)
		}
		if seen[[2]int{par, child}] {
			continue
		}
		seen[[2]int{par, child}] = true
		parents[child] = append(parents[child], par)
		if n := len(parents[child]) + len(f.Nodes[child].Job.DependsOn); n > MaxParents {
			return nil, queuetype.InvalidArgument(Field("FlowEdge", "Child").At("edges", i), "gives %q more than %d parents", e.Child, MaxParents)
		}
	}
	return parents, nil
}

// topoOrder orders the nodes parents first, keeping the given order among
// nodes that are ready together (Kahn's algorithm); a cycle is an error
// naming an edge on it and the cycle's path.
func (f FlowSpec) topoOrder(parents [][]int) ([]int, error) {
	n := len(f.Nodes)
	left := make([]int, n)
	children := make([][]int, n)
	for c, ps := range parents {
		left[c] = len(ps)
		for _, p := range ps {
			children[p] = append(children[p], c)
		}
	}
	order := make([]int, 0, n)
	var ready []int
	for i := range n {
		if left[i] == 0 {
			ready = append(ready, i)
		}
	}
	for len(ready) > 0 {
		i := ready[0]
		ready = ready[1:]
		order = append(order, i)
		for _, c := range children[i] {
			if left[c]--; left[c] == 0 {
				ready = append(ready, c)
			}
		}
	}
	if len(order) == n {
		return order, nil
	}
	return nil, f.cycleError(parents, left)
}

// cycleError finds a cycle among the nodes left unordered (left > 0) and
// names the edge that closes it.
func (f FlowSpec) cycleError(parents [][]int, left []int) error {
	start := 0
	for i, l := range left {
		if l > 0 {
			start = i
			break
		}
	}
	// Walk up through unordered parents until a node repeats: every
	// unordered node has one, so the walk must close a loop.
	at := map[int]int{}
	var path []int
	for i := start; ; {
		if k, ok := at[i]; ok {
			path = path[k:]
			break
		}
		at[i] = len(path)
		path = append(path, i)
		for _, p := range parents[i] {
			if left[p] > 0 {
				i = p
				break
			}
		}
	}
	// path runs child → parent; written parent → child it reads as the
	// order the flow asked for.
	names := make([]string, 0, len(path)+1)
	for k := len(path) - 1; k >= 0; k-- {
		names = append(names, f.Nodes[path[k]].Name)
	}
	names = append(names, f.Nodes[path[len(path)-1]].Name)
	parent, child := f.Nodes[path[0]].Name, f.Nodes[path[len(path)-1]].Name
	edge := 0
	for i, e := range f.Edges {
		if e.Parent == parent && e.Child == child {
			edge = i
			break
		}
	}
	return queuetype.InvalidArgument(Field("FlowEdge", "Child").At("edges", edge), "makes a cycle: %s", strings.Join(names, " → "))
}
