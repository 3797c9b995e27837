package mux_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/mux"
	"github.com/sluicehq/sluice/queue/queuetest"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
)

// A flow on the default backend runs as on that backend; one with a node
// on a routed queue, or a DependsOn naming a routed job, is refused and
// stores nothing.
func TestFlowsOnTheDefaultOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewFake(queuetest.Epoch)
	m := newMux(t, openSQLite(t, clk, sqlitequeue.Options{}),
		mux.Route{Name: "other", Backend: openSQLite(t, clk, sqlitequeue.Options{}), Queues: []string{"far"}})
	c := queue.NewClient(m)
	node := func(name, q string) queue.FlowNode {
		return queue.FlowNode{Name: name, Job: queue.JobSpec{Queue: q, Kind: "k"}}
	}
	fl, err := c.EnqueueFlow(ctx, queue.FlowSpec{Nodes: []queue.FlowNode{node("a", "near"), node("b", "near")},
		Edges: []queue.FlowEdge{{Parent: "a", Child: "b"}}})
	if err != nil || fl.Job("b").State != queue.StateBlocked {
		t.Fatalf("flow on the default = %+v, %v; want b blocked", fl, err)
	}
	_, err = c.EnqueueFlow(ctx, queue.FlowSpec{Nodes: []queue.FlowNode{node("a", "near"), node("b", "far")}})
	var ia *queue.InvalidArgumentError
	if !errors.As(err, &ia) || ia.Field != "nodes[1].JobSpec.Queue" || !strings.Contains(ia.Rule, "other") {
		t.Fatalf("flow with a routed node = %v, want nodes[1].JobSpec.Queue refused naming the route", err)
	}
	far, err := c.Enqueue(ctx, queue.JobSpec{Queue: "far", Kind: "k"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Enqueue(ctx, queue.JobSpec{Queue: "near", Kind: "k", DependsOn: []string{far.ID}})
	if !errors.As(err, &ia) || ia.Field != "JobSpec.DependsOn" {
		t.Fatalf("DependsOn a routed job = %v, want JobSpec.DependsOn refused", err)
	}
	got, err := c.Flow(ctx, fl.ID)
	if err != nil || len(got.Jobs) != 2 {
		t.Fatalf("Flow = %+v, %v", got, err)
	}
}
