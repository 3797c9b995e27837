package queue_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
)

// Client.Retry refuses a backend whose Features leave the Retry part out,
// whatever it declares, even when the backend has a Retry method.
func TestClientRetryUnsupported(t *testing.T) {
	t.Parallel()
	real, err := sqlitequeue.Open(filepath.Join(t.TempDir(), "jobs.db"), sqlitequeue.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer real.Close()
	cases := []struct {
		name string
		b    backend.Backend
	}{
		{"capability absent", laneBackend{Backend: real, caps: queue.AllCapabilities.Without(queue.CapRetry)}},
		{"part absent, capability declared", partsOnly{Backend: real, f: backend.Features{Name: "lane", Capabilities: queue.AllCapabilities}}},
	}
	for _, c := range cases {
		_, err := queue.NewClient(c.b).Retry(context.Background(), "1")
		var ue *queue.UnsupportedError
		if !errors.As(err, &ue) || ue.Feature != queue.CapRetry {
			t.Errorf("%s: Retry = %v, want *UnsupportedError for %s", c.name, err, queue.CapRetry)
		}
	}
}

func TestNotRetryableErrorText(t *testing.T) {
	t.Parallel()
	cases := []struct {
		err  error
		want string
	}{
		{&queue.NotRetryableError{ID: "7", State: queue.StateActive}, "queue: job 7 is active; only failed or cancelled jobs can be retried"},
		{&queue.NotRetryableError{ID: "7", State: queue.StateFailed, Group: "crawl"}, "queue: job 7 belongs to group crawl, which already counted it as finished; enqueue a new job instead of retrying it"},
		{&queue.DuplicateError{ID: "7", Holder: "9", Queue: "q", Key: "k"}, `queue: job 7 cannot be retried: its unique key "k" in queue q is held by job 9`},
	}
	for _, c := range cases {
		if got := c.err.Error(); got != c.want {
			t.Errorf("Error() = %q, want %q", got, c.want)
		}
	}
	if !errors.Is(cases[0].err, queue.ErrNotRetryable) || !errors.Is(cases[2].err, queue.ErrDuplicate) {
		t.Error("the typed errors do not match their sentinels")
	}
}
