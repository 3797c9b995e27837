package queue_test

import (
	"context"
	"errors"
	"testing"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/ratelimit/memlimit"
)

// TestWorkerID checks the id a worker records on the jobs it holds: the
// configured one, or a generated one.
func TestWorkerID(t *testing.T) {
	t.Parallel()
	b, done := openExample()
	defer done()
	if got := queue.NewWorker(b, queue.WorkerConfig{ID: "w-7"}).ID(); got != "w-7" {
		t.Errorf("ID = %q, want w-7", got)
	}
	a, c := queue.NewWorker(b, queue.WorkerConfig{}).ID(), queue.NewWorker(b, queue.WorkerConfig{}).ID()
	if a == "" || a == c {
		t.Errorf("generated ids = %q, %q; want two distinct non-empty ids", a, c)
	}
}

// TestRunRefusesBadStartRates checks that Run refuses a start rate that
// could never be checked, naming it, instead of letting every job run
// unchecked with a warning.
func TestRunRefusesBadStartRates(t *testing.T) {
	t.Parallel()
	b, done := openExample()
	defer done()
	store := memlimit.New(memlimit.Options{})
	defer store.Close()
	bad := ratelimit.Limit{Quota: 0, Window: ratelimit.PerMinute(1).Window}
	cases := []struct {
		name  string
		rates queue.StartRates
		field string
	}{
		{"tenant default", queue.StartRates{Store: store, Tenant: bad}, "StartRates.Tenant"},
		{"one group", queue.StartRates{Store: store, Groups: map[string]ratelimit.Limit{"crawl": bad}}, "StartRates.Groups[crawl]"},
	}
	for _, c := range cases {
		w := queue.NewWorker(b, queue.WorkerConfig{Queues: []string{"q"}, StartRates: c.rates})
		w.Handle("k", queue.HandlerFunc(func(context.Context, *queue.Job) ([]byte, error) { return nil, nil }))
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // a Run that starts returns at once, with no error
		err := w.Run(ctx)
		var ia *queue.InvalidArgumentError
		if !errors.As(err, &ia) || ia.Field != c.field {
			t.Errorf("%s: Run = %v, want an invalid argument naming %s", c.name, err, c.field)
		}
	}
	ok := queue.StartRates{Store: store, Tenants: map[string]ratelimit.Limit{"a": ratelimit.PerHour(2)}}
	if err := ok.Validate(); err != nil {
		t.Errorf("Validate(valid rates) = %v", err)
	}
}
