package pgqueue_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/queuetest"
)

// TestJobHooksAndTrace checks that a job's webhook and trace context are
// kept with it, as Get, List and Lease read it.
func TestJobHooksAndTrace(t *testing.T) {
	ctx := context.Background()
	s := open(t, clock.NewFake(queuetest.Epoch))
	hook := &queue.Webhook{URL: "https://h.example/done", Events: []queue.EventType{queue.EventJobCompleted},
		Headers: map[string]string{"X-A": "b"}, Metadata: json.RawMessage(`{"k":1}`)}
	const trace = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	spec := queue.JobSpec{Queue: "q", Kind: "k", Webhook: hook, Trace: trace}
	single, err := queue.NewClient(s).Enqueue(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	batch, err := queue.NewClient(s).EnqueueBatch(ctx, []queue.JobSpec{spec, spec})
	if err != nil {
		t.Fatal(err)
	}
	check := func(how string, j *queue.Job) {
		t.Helper()
		if !reflect.DeepEqual(j.Webhook, hook) || j.Trace != trace {
			t.Errorf("%s: webhook %+v, trace %q; want %+v, %q", how, j.Webhook, j.Trace, hook, trace)
		}
	}
	for _, id := range []string{single.ID, batch[0].Job.ID, batch[1].Job.ID} {
		j, err := s.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		check("Get", j)
	}
	page, err := s.List(ctx, queue.ListFilter{Queue: "q"})
	if err != nil || len(page.Jobs) != 3 {
		t.Fatalf("List = %v, %v; want 3 jobs", page, err)
	}
	check("List", page.Jobs[0])
	ls, err := s.Lease(ctx, backend.LeaseRequest{Queues: []string{"q"}, Max: 1, LeaseFor: 60e9})
	if err != nil || len(ls) != 1 {
		t.Fatalf("Lease = %v, %v", ls, err)
	}
	check("Lease", ls[0].Job)
}

// TestTenantSecrets checks setting, replacing, reading and removing a
// tenant's webhook secret.
func TestTenantSecrets(t *testing.T) {
	ctx := context.Background()
	ts := open(t, clock.NewFake(queuetest.Epoch)).Features().TenantSecrets
	if ts == nil {
		t.Fatal("Features().TenantSecrets is nil")
	}
	steps := []struct {
		set, want string
	}{{"first", "first"}, {"second", "second"}, {"", ""}}
	if got, err := ts.TenantSecret(ctx, "acme"); err != nil || got != "" {
		t.Fatalf("TenantSecret before any = %q, %v; want none", got, err)
	}
	for _, st := range steps {
		if err := ts.SetTenantSecret(ctx, "acme", st.set); err != nil {
			t.Fatalf("SetTenantSecret(%q): %v", st.set, err)
		}
		if got, err := ts.TenantSecret(ctx, "acme"); err != nil || got != st.want {
			t.Errorf("after setting %q: TenantSecret = %q, %v; want %q", st.set, got, err, st.want)
		}
	}
	if err := ts.SetTenantSecret(ctx, "acme", "has space"); !errors.Is(err, queue.ErrInvalidArgument) {
		t.Errorf("SetTenantSecret with a space: %v, want ErrInvalidArgument", err)
	}
}
