package redisqueue_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/redisqueue"
)

// TestFunctionLibrary: on a real Redis the scripts run as functions of
// the library, which loads (a library that does not compile would leave
// every call on EVALSHA unnoticed), and a job goes through them.
func TestFunctionLibrary(t *testing.T) {
	s := realServer(t)
	c := s.client(t)
	ctx := context.Background()
	src := redisqueue.LibrarySource()
	name := strings.TrimPrefix(strings.SplitN(src, "\n", 2)[0], "#!lua name=")
	if err := c.FunctionLoad(ctx, src).Err(); err != nil && !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("FUNCTION LOAD: %v", err)
	}
	be := s.backendOn(t, c, redisqueue.Options{})
	cl := queue.NewClient(be)
	before := fcalls(t, c)
	if _, err := cl.Enqueue(ctx, queue.JobSpec{Queue: "q", Kind: "k"}); err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	ls, err := be.Lease(ctx, queue.LeaseRequest{Queues: []string{"q"}, WorkerID: "w", Max: 1, LeaseFor: time.Minute})
	if err != nil || len(ls) != 1 {
		t.Fatalf("Lease = %d, %v; want 1 lease", len(ls), err)
	}
	if err := be.Complete(ctx, ls[0].Job.ID, ls[0].Token, nil); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if got := fcalls(t, c) - before; got < 3 {
		t.Errorf("%d FCALLs for enqueue, lease and complete, want at least 3", got)
	}
	libs, err := c.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: name}).Result()
	if err != nil || len(libs) != 1 {
		t.Errorf("FUNCTION LIST %s = %d libraries, %v; want 1", name, len(libs), err)
	}
}

// fcalls is how many FCALLs the server has run.
func fcalls(t *testing.T, c *redis.Client) int {
	t.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "cmdstat_fcall:calls="); ok {
			n, _ := strconv.Atoi(strings.SplitN(v, ",", 2)[0])
			return n
		}
	}
	return 0
}
