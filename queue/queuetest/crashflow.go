package queuetest

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// crashParents lists the parents of node i of the crash flow of n jobs:
// the job a quarter of the flow before it (so the first quarter are roots
// and the rest form chains four deep), and every tenth job also waits for
// the two before it (fan-ins across chains).
func crashParents(i, n int) []int {
	if i < n/4 {
		return nil
	}
	ps := []int{i - n/4}
	if i%10 == 0 {
		ps = append(ps, i-1, i-2)
	}
	return ps
}

func enqueueCrashFlow(t *testing.T, b backend.Backend, n int, group string) []string {
	t.Helper()
	f := queue.FlowSpec{Name: "crash"}
	for i := range n {
		name := strconv.Itoa(i)
		f.Nodes = append(f.Nodes, queue.FlowNode{Name: name,
			Job: queue.JobSpec{Queue: "crash", Kind: crashKind, Payload: []byte(name), Group: group}})
		for _, p := range crashParents(i, n) {
			f.Edges = append(f.Edges, queue.FlowEdge{Parent: strconv.Itoa(p), Child: name})
		}
	}
	fl, err := queue.NewClient(b).EnqueueFlow(context.Background(), f)
	if err != nil {
		t.Fatalf("EnqueueFlow: %v", err)
	}
	ids := make([]string, n)
	for i := range n {
		ids[i] = fl.Job(strconv.Itoa(i)).ID
	}
	return ids
}

// checkParents is the crash worker's check of a dependent job: it runs
// with every parent completed and their results.
func checkParents(j *queue.Job) error {
	if len(j.Parents) != len(j.DependsOn) {
		return fmt.Errorf("job %s has %d parents' results for %d parents", j.ID, len(j.Parents), len(j.DependsOn))
	}
	for _, p := range j.Parents {
		if p.State != queue.StateCompleted || string(p.Result) != "ok" {
			return fmt.Errorf("job %s runs while parent %s is %s with result %q", j.ID, p.ID, p.State, p.Result)
		}
	}
	return nil
}

// checkCrashFlow checks that every job of the crash flow last started
// after each of its parents finished.
func checkCrashFlow(t *testing.T, b backend.Backend, ids []string) {
	t.Helper()
	ctx := context.Background()
	jobs := make([]*queue.Job, len(ids))
	for i, id := range ids {
		j, err := b.Get(ctx, id)
		if err != nil {
			t.Fatalf("Get(%s): %v", id, err)
		}
		jobs[i] = j
	}
	for i, j := range jobs {
		for _, p := range crashParents(i, len(ids)) {
			if j.StartedAt.Before(jobs[p].FinishedAt) {
				t.Errorf("job %s started at %s, before its parent %s finished at %s", j.ID, j.StartedAt, jobs[p].ID, jobs[p].FinishedAt)
			}
		}
	}
}

// logUnfinished logs the crash jobs that did not complete, to say why a
// crash test failed.
func logUnfinished(t *testing.T, b backend.Backend) {
	f := queue.ListFilter{Queue: "crash", Limit: queue.MaxListLimit}
	for n := 0; n < 20; {
		p, err := b.List(context.Background(), f)
		if err != nil {
			t.Logf("List: %v", err)
			return
		}
		for _, j := range p.Jobs {
			if j.State != queue.StateCompleted && n < 20 {
				t.Logf("unfinished: job %s (%s) %s attempt %d stalls %d parents %v: %s", j.ID, j.FlowNode, j.State, j.Attempt, j.Stalls, j.DependsOn, j.LastError)
				n++
			}
		}
		if p.Next == "" {
			return
		}
		f.Cursor = p.Next
	}
}
