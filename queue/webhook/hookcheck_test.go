package webhook_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/webhook"
)

// TestWebhookCheckOnEveryCall: a client given the guard's WebhookCheck
// refuses a private receiver on every call that stores a webhook, naming
// the field where the call takes it, and stores nothing; a public one is
// taken.
func TestWebhookCheckOnEveryCall(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := openBackend(t, clock.Real, true)
	c := queue.NewClient(b, queue.ClientConfig{CheckWebhook: webhook.Guard{}.WebhookCheck(nil)})
	spec := func(url string) queue.JobSpec {
		return queue.JobSpec{Queue: "q", Kind: "k", Webhook: &queue.Webhook{URL: url}}
	}
	calls := []struct {
		name, field string
		call        func(url string) error
	}{
		{"Enqueue", "JobSpec.Webhook.URL", func(u string) error { _, err := c.Enqueue(ctx, spec(u)); return err }},
		{"EnqueueBatch", "specs[1].JobSpec.Webhook.URL", func(u string) error {
			_, err := c.EnqueueBatch(ctx, []queue.JobSpec{spec("https://93.184.216.34/"), spec(u)})
			return err
		}},
		{"EnqueueFlow", "nodes[1].JobSpec.Webhook.URL", func(u string) error {
			_, err := c.EnqueueFlow(ctx, queue.FlowSpec{Nodes: []queue.FlowNode{{Name: "a", Job: spec("https://93.184.216.34/")}, {Name: "b", Job: spec(u)}}})
			return err
		}},
		{"SetSchedule", "Schedule.Job.Webhook.URL", func(u string) error {
			_, err := c.SetSchedule(ctx, queue.Schedule{Name: "s", Every: 60e9, Job: spec(u)})
			return err
		}},
		{"SyncSchedules", "schedules[0].Schedule.Job.Webhook.URL", func(u string) error {
			return c.SyncSchedules(ctx, queue.SourceConfig, []queue.Schedule{{Name: "f", Every: 60e9, Job: spec(u)}})
		}},
		{"CreateGroup", "GroupSpec.Webhook.URL", func(u string) error {
			_, err := c.CreateGroup(ctx, queue.GroupSpec{ID: "g", Webhook: &queue.Webhook{URL: u}})
			return err
		}},
	}
	for _, call := range calls {
		for _, u := range []string{"http://127.0.0.1/", "http://[::ffff:10.0.0.1]/", "http://[64:ff9b::a9fe:a9fe]/"} {
			err := call.call(u)
			var ia *queue.InvalidArgumentError
			if !errors.As(err, &ia) || ia.Field != call.field || !strings.Contains(ia.Rule, "Guard.Allow") {
				t.Errorf("%s(%s) = %v; want an *InvalidArgumentError on %s saying how to allow it", call.name, u, err, call.field)
			}
		}
	}
	if p, err := c.List(ctx, queue.ListFilter{}); err != nil || len(p.Jobs) != 0 {
		t.Fatalf("refused calls stored %v (%v)", p, err)
	}
	if l, err := c.Schedules(ctx); err != nil || len(l) != 0 {
		t.Fatalf("refused calls stored schedules %v (%v)", l, err)
	}
	for _, call := range calls {
		if err := call.call("https://93.184.216.34/"); err != nil {
			t.Errorf("%s with a public receiver: %v", call.name, err)
		}
	}
}
