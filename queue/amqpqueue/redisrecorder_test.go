package amqpqueue

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/queue"
)

func TestRedisRecorder(t *testing.T) {
	t.Parallel()
	m := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { c.Close() })
	r, err := NewRedisRecorder(c, RedisRecorderOptions{Prefix: "t:", Retention: queue.Retention{Failed: -1}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	jobs := []*queue.Job{
		{ID: "live", JobSpec: queue.JobSpec{Queue: "q", Kind: "k", Payload: []byte{0, 1}}, State: queue.StatePending, CreatedAt: epoch},
		{ID: "done", JobSpec: queue.JobSpec{Queue: "q", Kind: "k"}, State: queue.StateCompleted, Result: []byte("r"), FinishedAt: epoch},
		{ID: "failed", JobSpec: queue.JobSpec{Queue: "q", Kind: "k"}, State: queue.StateFailed, LastError: "boom",
			Errors: []queue.AttemptError{{Attempt: 1, At: epoch, Error: "boom"}}},
	}
	for _, j := range jobs {
		if err := r.Record(ctx, j); err != nil {
			t.Fatalf("Record(%s): %v", j.ID, err)
		}
	}
	got, err := r.Lookup(ctx, "live")
	if err != nil || got.State != queue.StatePending || string(got.Payload) != "\x00\x01" || !got.CreatedAt.Equal(epoch) {
		t.Fatalf("Lookup(live) = %+v, %v", got, err)
	}
	if got, _ := r.Lookup(ctx, "failed"); got.LastError != "boom" || len(got.Errors) != 1 {
		t.Fatalf("Lookup(failed) = %+v", got)
	}
	if _, err := r.Lookup(ctx, "nope"); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("Lookup(missing) = %v, want ErrNotFound", err)
	}
	ttls := []struct {
		id   string
		want time.Duration
	}{{"live", 7 * 24 * time.Hour}, {"done", 24 * time.Hour}, {"failed", -1}}
	for _, tc := range ttls {
		got := m.TTL("t:lane-job:" + tc.id)
		if tc.want < 0 && got != 0 || tc.want > 0 && got != tc.want {
			t.Errorf("TTL(%s) = %s, want %s", tc.id, got, tc.want)
		}
	}
	m.FastForward(25 * time.Hour)
	if _, err := r.Lookup(ctx, "done"); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("completed job after its retention: %v, want ErrNotFound", err)
	}

	final, _ := NewRedisRecorder(c, RedisRecorderOptions{Prefix: "f:", FinalOnly: true})
	_ = final.Record(ctx, &queue.Job{ID: "x", State: queue.StateActive})
	if _, err := final.Lookup(ctx, "x"); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("FinalOnly recorded an active job: %v", err)
	}
	if _, err := NewRedisRecorder(c, RedisRecorderOptions{Prefix: "bad"}); !errors.Is(err, queue.ErrInvalidArgument) {
		t.Fatalf("bad prefix: %v", err)
	}
}
