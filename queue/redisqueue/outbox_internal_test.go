package redisqueue

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/queue"
)

// TestOutboxArgsRequired checks that a script which ends a job but was run
// without the outbox's arguments fails, rather than reading its own
// arguments as the outbox's, and changes nothing.
func TestOutboxArgsRequired(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: miniredis.RunT(t).Addr()})
	t.Cleanup(func() { _ = c.Close() })
	b, err := New(c, Options{Outbox: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	ctx := context.Background()
	j, err := queue.NewClient(b).Enqueue(ctx, queue.JobSpec{Queue: "q", Kind: "k"})
	if err != nil {
		t.Fatal(err)
	}
	seq, _, _ := parseID(j.ID)
	k := b.keys.queue("q")
	keys, args := b.group([]*qkeys{k}, 1)
	keys = append(keys, k.jobKey(seq), k.errorsKey(seq))
	_, err = scriptCancel.Run(ctx, c, keys, append(args, seq)...).Result()
	if err == nil || !strings.Contains(err.Error(), "outbox arguments") {
		t.Fatalf("cancel without the outbox arguments = %v, want a script error about them", err)
	}
	if got, err := b.Get(ctx, j.ID); err != nil || got.State != queue.StatePending {
		t.Fatalf("job after the failed script = %+v, %v; want it still pending", got, err)
	}
}
