package redisqueue

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/keyspace"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// Flows (backend.FlowBackend): lua/flowlib.lua settles a parent's children
// in the script that ends it; lua/flow_enqueue.lua stores dependent jobs
// and flows; lua/flow_read.lua reads them. Flows reach jobs of other
// queues through keys derived from job keys, as the tenant and group
// scheduler does, so they are served only where it is (not on Cluster).

var (
	scriptFlowEnqueue = loadScript("flow_enqueue")
	scriptFlowRead    = buildScript("flow_read", "", "events", "lib")
)

func init() { allScripts = append(allScripts, scriptFlowEnqueue, scriptFlowRead) }

// flowKey is the hash of flow id.
func (r *keyring) flowKey(id string) string {
	logical, err := keyspace.Join("flow", id)
	if err != nil {
		panic("redisqueue: " + err.Error()) // ids are validated non-empty
	}
	phys, err := r.prefix.Physical(logical)
	if err != nil {
		panic("redisqueue: " + err.Error())
	}
	return phys
}

// flowNodeFields is the number of arguments per node of flow_enqueue.lua.
const flowNodeFields = specFields + 5

// EnqueueFlow implements backend.FlowBackend.
func (b *Backend) EnqueueFlow(ctx context.Context, p backend.FlowPlan) ([]*queue.Job, error) {
	if p.ID == "" {
		return nil, backend.InvalidArgument(queue.Field("FlowPlan", "ID"), "must not be empty")
	}
	nodes := make([]flowNode, len(p.Nodes))
	for i, n := range p.Nodes {
		nodes[i] = flowNode{name: n.Name, spec: n.Spec, parents: n.Parents}
	}
	jobs, err := b.enqueueNodes(ctx, p.ID, p.Name, nodes)
	if err != nil {
		return nil, err
	}
	return jobs, nil
}

// flowNode is one job for flow_enqueue.lua.
type flowNode struct {
	name    string
	spec    queue.JobSpec
	parents []int // earlier nodes
}

// enqueueDeps is Enqueue for a batch with DependsOn: every spec is a node
// of no flow.
func (b *Backend) enqueueDeps(ctx context.Context, specs []queue.JobSpec) ([]queue.Enqueued, error) {
	nodes := make([]flowNode, len(specs))
	for i, s := range specs {
		nodes[i] = flowNode{spec: s}
	}
	jobs, err := b.enqueueNodes(ctx, "", "", nodes)
	if err != nil {
		return nil, err
	}
	out := make([]queue.Enqueued, len(jobs))
	for i, j := range jobs {
		out[i] = queue.Enqueued{Job: j}
	}
	return out, nil
}

func (b *Backend) enqueueNodes(ctx context.Context, id, name string, nodes []flowNode) ([]*queue.Job, error) {
	if b.schedPrefix == "" {
		return nil, &queue.UnsupportedError{Backend: "redisqueue", Feature: queue.CapFlows}
	}
	var qs []*qkeys
	pos := map[string]int{}
	for _, n := range nodes {
		if _, ok := pos[n.spec.Queue]; !ok {
			qs = append(qs, b.keys.queue(n.spec.Queue))
			pos[n.spec.Queue] = len(qs)
		}
	}
	keys, args := b.group(qs, 4+flowNodeFields*len(nodes))
	fkey := ""
	if id != "" {
		fkey = b.keys.flowKey(id)
	}
	args = append(args, id, fkey, name, len(nodes))
	for i, n := range nodes {
		var err error
		if args, err = b.nodeArgs(args, pos[n.spec.Queue], n, i, len(nodes)); err != nil {
			return nil, err
		}
	}
	res, err := b.eval(ctx, "enqueue flow", scriptFlowEnqueue, keys, args...)
	if err != nil {
		return nil, err
	}
	return b.decodeNodes(res, qs, pos, nodes, id)
}

// nodeArgs appends node n's arguments: its spec's, then its flow fields.
func (b *Backend) nodeArgs(args []any, qpos int, n flowNode, i, total int) ([]any, error) {
	args = b.specArgs(args, qpos, n.spec)
	var keys, ids []string
	for _, pid := range n.spec.DependsOn {
		seq, q, err := parseID(pid)
		if err != nil {
			return nil, nodeInvalid(i, total, pid)
		}
		keys = append(keys, b.keys.queue(q).jobKey(seq))
		ids = append(ids, pid)
	}
	internal := make([]string, len(n.parents))
	for k, p := range n.parents {
		internal[k] = strconv.Itoa(p)
	}
	return append(args, n.name, string(n.spec.OnParentFailure), strings.Join(internal, ","),
		strings.Join(keys, "\x00"), strings.Join(ids, ",")), nil
}

// nodeInvalid is the error of a DependsOn id that names no job.
func nodeInvalid(i, total int, id string) error {
	path := queue.Field("JobSpec", "DependsOn")
	if total > 1 {
		path = path.At("nodes", i)
	}
	return &queue.InvalidArgumentError{Field: path.String(), Rule: fmt.Sprintf("names no job: %q", id), Path: path}
}

func (b *Backend) decodeNodes(res any, qs []*qkeys, pos map[string]int, nodes []flowNode, flow string) ([]*queue.Job, error) {
	top, err := asList(res, "enqueue flow reply")
	if err != nil {
		return nil, b.fault("enqueue flow", err)
	}
	if len(top) > 0 {
		switch asString(top[0]) {
		case "nf":
			return nil, nodeInvalid(int(asInt(top[1])), len(nodes), asString(top[2]))
		case "dup":
			return nil, fmt.Errorf("redisqueue: node %d: unique key held by another job: %w", asInt(top[1]), queue.ErrDuplicate)
		case "gc":
			return nil, fmt.Errorf("redisqueue: %w: group %s", queue.ErrGroupClosed, asString(top[1]))
		case "bf":
			if err := refusal(top); err != nil {
				return nil, err
			}
		}
	}
	if len(top) != 3 {
		return nil, b.fault("enqueue flow", errReply{"enqueue flow reply"})
	}
	now := micros(asString(top[0]))
	items, err := asList(top[1], "enqueue flow results")
	if err != nil || len(items) != len(nodes) {
		return nil, b.fault("enqueue flow", errReply{"enqueue flow results"})
	}
	woken, _ := top[2].([]any)
	b.wakeLocal(qs, woken)
	out := make([]*queue.Job, len(nodes))
	for i, n := range nodes {
		it, err := asList(items[i], "enqueue flow result")
		if err != nil || len(it) != 3 {
			return nil, b.fault("enqueue flow", errReply{"enqueue flow result"})
		}
		k := qs[pos[n.spec.Queue]-1]
		j := newJob(k, asString(it[0]), queue.State(asString(it[1])), n.spec, now)
		j.Flow, j.FlowNode, j.LastError = flow, n.name, asString(it[2])
		if j.State == queue.StateCancelled {
			j.FinishedAt = now
		}
		for _, p := range n.parents {
			j.DependsOn = append(j.DependsOn, out[p].ID)
		}
		out[i] = j
	}
	return out, nil
}

// Flow implements backend.FlowBackend.
func (b *Backend) Flow(ctx context.Context, id string) (*queue.Flow, error) {
	if b.schedPrefix == "" || id == "" {
		return nil, queue.ErrFlowNotFound
	}
	_, args := b.group(nil, 2)
	res, err := b.eval(ctx, "flow", scriptFlowRead, nil, append(args, "flow", b.keys.flowKey(id))...)
	if err != nil {
		return nil, err
	}
	top, err := asList(res, "flow reply")
	if err == nil && len(top) == 1 {
		return nil, queue.ErrFlowNotFound
	}
	if err != nil || len(top) != 3 {
		return nil, b.fault("flow", errReply{"flow reply"})
	}
	f := &queue.Flow{ID: id, Name: asString(top[0]), CreatedAt: micros(asString(top[1]))}
	items, _ := top[2].([]any)
	for _, it := range items {
		l, err := asList(it, "flow job")
		if err != nil || len(l) != 3 {
			return nil, b.fault("flow", errReply{"flow job"})
		}
		seq, q, err := parseID(asString(l[0]))
		if err != nil {
			return nil, b.fault("flow", errReply{"flow job id"})
		}
		j, err := decodeJob(b.keys.queue(q), seq, []any{l[1], l[2]})
		if err != nil || j == nil {
			return nil, b.fault("flow", errReply{"flow job"})
		}
		f.Jobs = append(f.Jobs, j)
	}
	return f, nil
}

// Relatives implements backend.FlowBackend.
func (b *Backend) Relatives(ctx context.Context, id string, maxResults int) (*queue.Relatives, error) {
	seq, q, err := parseID(id)
	if err != nil {
		return nil, err
	}
	_, args := b.group(nil, 3)
	res, err := b.eval(ctx, "relatives", scriptFlowRead, nil, append(args, "rel", b.keys.queue(q).jobKey(seq), maxResults)...)
	if err != nil {
		return nil, err
	}
	top, err := asList(res, "relatives reply")
	if err == nil && len(top) == 1 {
		return nil, queue.ErrNotFound
	}
	if err != nil || len(top) != 3 {
		return nil, b.fault("relatives", errReply{"relatives reply"})
	}
	rel := &queue.Relatives{}
	parents, _ := top[1].([]any)
	for _, p := range parents {
		l, err := asList(p, "parent")
		if err != nil || len(l) != 6 {
			return nil, b.fault("relatives", errReply{"parent"})
		}
		pr := queue.ParentResult{JobRef: jobRef(l), Omitted: asInt(l[5]) == 1}
		if r := asString(l[4]); r != "" {
			pr.Result = []byte(r)
		}
		rel.Parents = append(rel.Parents, pr)
	}
	children, _ := top[2].([]any)
	for _, c := range children {
		l, err := asList(c, "child")
		if err != nil || len(l) != 4 {
			return nil, b.fault("relatives", errReply{"child"})
		}
		rel.Children = append(rel.Children, jobRef(l))
	}
	slices.SortFunc(rel.Children, func(x, y queue.JobRef) int { return strings.Compare(x.ID, y.ID) })
	return rel, nil
}

// hasDeps reports whether a spec of an enqueue has parents.
func hasDeps(specs []queue.JobSpec) bool {
	for _, s := range specs {
		if len(s.DependsOn) > 0 {
			return true
		}
	}
	return false
}

// jobRef reads {id, state, kind, node}.
func jobRef(l []any) queue.JobRef {
	id := asString(l[0])
	_, q, _ := parseID(id)
	return queue.JobRef{ID: id, Queue: q, State: queue.State(asString(l[1])), Kind: asString(l[2]), FlowNode: asString(l[3])}
}
