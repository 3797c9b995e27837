package redisqueue_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
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
	ls, err := be.Lease(ctx, backend.LeaseRequest{Queues: []string{"q"}, WorkerID: "w", Max: 1, LeaseFor: time.Minute})
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
	return int(commandStats(t, c)["fcall"].calls)
}

// cmdStat is one command's counts in INFO commandstats.
type cmdStat struct{ calls, usec float64 }

// commandStats reads INFO commandstats, by command name ("fcall").
func commandStats(tb testing.TB, c *redis.Client) map[string]cmdStat {
	tb.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		tb.Fatal(err)
	}
	out := map[string]cmdStat{}
	for _, l := range strings.Split(info, "\r\n") {
		k, v, ok := strings.Cut(l, ":")
		name, isCmd := strings.CutPrefix(k, "cmdstat_")
		if !ok || !isCmd {
			continue
		}
		var st cmdStat
		for _, f := range strings.Split(v, ",") {
			field, num, _ := strings.Cut(f, "=")
			x, _ := strconv.ParseFloat(num, 64)
			switch field {
			case "calls":
				st.calls = x
			case "usec":
				st.usec = x
			}
		}
		out[name] = st
	}
	return out
}
