package webhook_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/webhook"
)

// TestHookPayloadCarriesFlowAndGroup completes the root job of a flow
// whose job carries a webhook and belongs to a group: the payload names
// the flow, the node, the group and carries the metadata and result.
func TestHookPayloadCarriesFlowAndGroup(t *testing.T) {
	for name, open := range hookBackends() {
		t.Run(name, func(t *testing.T) {
			clk := clock.NewFake(epoch)
			b := open(t, clk)
			rc := &recorder{}
			srv := newServer(t, rc.ServeHTTP)
			ctx := context.Background()
			c := queue.NewClient(b)
			if _, err := c.CreateGroup(ctx, queue.GroupSpec{ID: "g-1", Tenant: "acme"}); err != nil {
				t.Fatal(err)
			}
			hook := &queue.Webhook{URL: srv.URL, Metadata: json.RawMessage(`{"crawl":"c-9"}`)}
			f, err := c.EnqueueFlow(ctx, queue.FlowSpec{Nodes: []queue.FlowNode{
				{Name: "fetch", Job: queue.JobSpec{Queue: "crawl", Kind: "page", Tenant: "acme", Group: "g-1", Webhook: hook}},
				{Name: "index", Job: queue.JobSpec{Queue: "crawl", Kind: "index", Tenant: "acme"}},
			}, Edges: []queue.FlowEdge{{Parent: "fetch", Child: "index"}}})
			if err != nil {
				t.Fatal(err)
			}
			ls, err := b.Lease(ctx, backend.LeaseRequest{Queues: []string{"crawl"}, WorkerID: "w", Max: 1, LeaseFor: time.Minute})
			if err != nil || len(ls) != 1 || ls[0].Job.FlowNode != "fetch" {
				t.Fatalf("Lease = %+v, %v: want the flow's root", ls, err)
			}
			if err := b.Complete(ctx, ls[0].Job.ID, ls[0].Token, []byte(`{"ok":true}`)); err != nil {
				t.Fatal(err)
			}
			d := newDispatcher(t, b, webhook.Config{Clock: clk, Jobs: &webhook.JobHooks{Backend: b}})
			dispatch(t, d, 2) // the job's event and its group's completion (no webhook there)
			got := rc.deliveries()
			if len(got) != 1 {
				t.Fatalf("receiver got %d requests, want 1", len(got))
			}
			var p webhook.HookPayload
			if err := json.Unmarshal(got[0].body, &p); err != nil {
				t.Fatal(err)
			}
			want := webhook.HookPayload{Flow: f.ID, FlowNode: "fetch", Webhook: "job"}
			if p.Flow != want.Flow || p.FlowNode != want.FlowNode || p.Group != "g-1" || p.Webhook != want.Webhook ||
				string(p.Metadata) != `{"crawl":"c-9"}` || string(p.Result) != `{"ok":true}` {
				t.Fatalf("payload %s: want flow %s node fetch, group g-1, the metadata and the result", got[0].body, f.ID)
			}
			var raw map[string]any
			if err := json.Unmarshal(got[0].body, &raw); err != nil {
				t.Fatal(err)
			}
			if raw["flow"] != f.ID || raw["flow_node"] != "fetch" || raw["group"] != "g-1" {
				t.Errorf("payload keys flow=%v flow_node=%v group=%v, want %s fetch g-1", raw["flow"], raw["flow_node"], raw["group"], f.ID)
			}
		})
	}
}
