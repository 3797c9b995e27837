package amqpqueue

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/keyspace"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/redisqueue"
)

// helperSched, when set, is the key prefix of the Redis Scheduler the
// crash worker process opens (on SLUICE_REDIS_URL), with leases of
// schedLease so that its slots expire soon after it is killed.
const (
	helperSched = "SLUICE_AMQP_CRASH_SCHED"
	schedLease  = time.Second
)

func helperScheduler() backend.Backend {
	p := os.Getenv(helperSched)
	if p == "" {
		return nil
	}
	o, err := redis.ParseURL(os.Getenv(redistest.EnvURL))
	if err != nil {
		panic(err)
	}
	s, err := redisqueue.New(redis.NewClient(o), redisqueue.Options{Prefix: keyspace.Prefix(p), DisableBreaker: true})
	if err != nil {
		panic(err)
	}
	return s
}

func helperLease() time.Duration {
	if os.Getenv(helperSched) != "" {
		return schedLease
	}
	return 0
}

// openRedisScheduled opens a lane with a Redis Scheduler under a fresh
// prefix, which it returns; it skips without SLUICE_REDIS_URL.
func openRedisScheduled(t *testing.T, opts Options) (*Backend, keyspace.Prefix) {
	t.Helper()
	o, prefix, ok := redistest.Real(t)
	if !ok {
		t.Skipf("%s is not set: skipping a test that shares a Redis Scheduler between processes", redistest.EnvURL)
	}
	c := redis.NewClient(o)
	t.Cleanup(func() { c.Close() })
	s, err := redisqueue.New(c, redisqueue.Options{Prefix: prefix, DisableBreaker: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	opts.Scheduler = s
	return open(t, opts), prefix
}

// TestCrashFreesTenantSlots kills a worker process running a tenant's
// jobs at its limit: the slots stay taken while the leases run (the jobs
// may still be running somewhere), free when the leases expire and are
// rescued, and are neither leaked nor counted twice: the next worker runs
// every job, never more than the limit at once, and the tenant ends with
// nothing counted.
func TestCrashFreesTenantSlots(t *testing.T) {
	const n, limit = 6, 2
	b, prefix := openRedisScheduled(t, Options{Prefetch: crashPrefetch})
	c := queue.NewClient(b)
	if err := c.SetTenantLimit(bg(), "t", limit); err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for range n {
		j, err := c.Enqueue(bg(), queue.JobSpec{Queue: crashQueue, Kind: "k", Tenant: "t"})
		if err != nil {
			t.Fatal(err)
		}
		ids[j.ID] = true
	}
	cmd, lines := startSchedHelper(t, b.opts.Prefix, string(prefix))
	var killed []string
	for len(killed) < limit {
		select {
		case l := <-lines:
			id, ok := strings.CutPrefix(l, "start ")
			if !ok {
				t.Fatalf("worker process: %s", l)
			}
			killed = append(killed, id)
		case <-time.After(20 * time.Second):
			t.Fatalf("worker process started %d jobs, want %d", len(killed), limit)
		}
	}
	wantTenant(t, c, "t", 0, n-limit, limit)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	wantTenant(t, c, "t", 0, n-limit, limit) // the dead process's leases still hold the slots
	testutil.Eventually(t, "the dead process's slots to free", func() error {
		if _, err := b.RescueExpired(bg(), backend.RescueRequest{}); err != nil {
			return err
		}
		info, err := c.Tenant(bg(), "t")
		if err != nil || info.Active != 0 || info.Pending != limit {
			return fmt.Errorf("tenant %+v, %v", info, err)
		}
		return nil
	})
	for _, id := range killed {
		if j, err := b.Get(bg(), id); err != nil || j.Stalls != 1 || j.State != queue.StatePending {
			t.Errorf("job %s after the rescue: %+v, %v; want pending with one stall", id, j, err)
		}
	}

	var mu sync.Mutex
	running, most := 0, 0
	ran := map[string]int{}
	w := queue.NewWorker(b, queue.WorkerConfig{Queues: []string{crashQueue}, Concurrency: 8, Logger: quiet, PollInterval: 10 * time.Millisecond})
	w.Handle("k", queue.HandlerFunc(func(ctx context.Context, j *queue.Job) ([]byte, error) {
		mu.Lock()
		running++
		most = max(most, running)
		ran[j.ID]++
		mu.Unlock()
		time.Sleep(20 * time.Millisecond) // overlap, so the limit is what holds them apart
		mu.Lock()
		running--
		mu.Unlock()
		return nil, nil
	}))
	stop := testutil.Start(t, w)
	testutil.Eventually(t, "every job to complete", func() error {
		for id := range ids {
			if j, err := b.Get(bg(), id); err != nil || j.State != queue.StateCompleted {
				return fmt.Errorf("job %s: %+v, %v", id, j, err)
			}
		}
		return nil
	})
	stop()
	for id := range ids {
		if ran[id] != 1 {
			t.Errorf("job %s ran %d times in the second process, want once", id, ran[id])
		}
	}
	if most > limit {
		t.Errorf("%d jobs of the tenant ran at once, limit %d", most, limit)
	}
	wantTenant(t, c, "t", 0, 0, 0)
}

// TestBrokerDropKeepsTenantSlots drops the lane's connections from the
// broker's side while a tenant's jobs hold its slots: the scheduled jobs'
// leases are the Scheduler's, so the drop neither frees nor doubles a
// slot; the held jobs complete with their tokens, the waiting ones follow,
// and the broker's own jobs, redelivered, run too.
func TestBrokerDropKeepsTenantSlots(t *testing.T) {
	const limit = 2
	b := open(t, Options{Prefetch: 10, ReconnectMin: 20 * time.Millisecond, ReconnectMax: 500 * time.Millisecond,
		Scheduler: openSQLiteScheduler(t, nil)})
	c := queue.NewClient(b)
	if err := c.SetTenantLimit(bg(), "t", limit); err != nil {
		t.Fatal(err)
	}
	var tenantJobs, plainJobs []string
	for range 5 {
		j, err := c.Enqueue(bg(), queue.JobSpec{Queue: "r", Kind: "k", Tenant: "t"})
		if err != nil {
			t.Fatal(err)
		}
		tenantJobs = append(tenantJobs, j.ID)
		j, err = c.Enqueue(bg(), queue.JobSpec{Queue: "r", Kind: "k"})
		if err != nil {
			t.Fatal(err)
		}
		plainJobs = append(plainJobs, j.ID)
	}
	var held []queue.Lease
	testutil.Eventually(t, "the tenant's jobs and a plain one to be leased", func() error {
		ls, err := b.Lease(bg(), backend.LeaseRequest{Queues: []string{"r"}, WorkerID: "w", Max: 10, LeaseFor: time.Minute})
		if err != nil {
			return err
		}
		held = append(held, ls...)
		if len(held) < limit+len(plainJobs) {
			return fmt.Errorf("%d leased", len(held))
		}
		return nil
	})
	wantTenant(t, c, "t", 0, 5-limit, limit)
	if n := closeConnections(t, b.opts.ConnectionName); n == 0 {
		t.Fatal("no connection of the lane to close")
	}
	wantTenant(t, c, "t", 0, 5-limit, limit) // no slot freed, none doubled
	for _, l := range held {
		err := b.Complete(bg(), l.Job.ID, l.Token, nil)
		if l.Job.Tenant != "" && err != nil {
			t.Fatalf("Complete(%s) of a scheduled job after the drop: %v", l.Job.ID, err)
		}
	}
	ran := map[string]int{}
	var mu sync.Mutex
	w := queue.NewWorker(b, queue.WorkerConfig{Queues: []string{"r"}, Concurrency: 4, Logger: quiet, PollInterval: 10 * time.Millisecond})
	w.Handle("k", queue.HandlerFunc(func(ctx context.Context, j *queue.Job) ([]byte, error) {
		mu.Lock()
		defer mu.Unlock()
		ran[j.ID]++
		return nil, nil
	}))
	stop := testutil.Start(t, w)
	testutil.Eventually(t, "every job to complete", func() error {
		for _, id := range append(append([]string{}, tenantJobs...), plainJobs...) {
			if j, err := b.Get(bg(), id); err != nil || j.State != queue.StateCompleted {
				return fmt.Errorf("job %s: %+v, %v", id, j, err)
			}
		}
		return nil
	})
	stop()
	for _, id := range tenantJobs {
		if ran[id] > 1 {
			t.Errorf("tenant job %s ran %d times after the drop", id, ran[id])
		}
	}
	wantTenant(t, c, "t", 0, 0, 0)
}

// startSchedHelper runs the crash worker process with the Scheduler under
// schedPrefix; it blocks in every job it starts.
func startSchedHelper(t *testing.T, prefix, schedPrefix string) (*exec.Cmd, <-chan string) {
	t.Helper()
	t.Setenv(helperSched, schedPrefix)
	return startHelper(t, prefix, 0)
}

func wantTenant(t *testing.T, c *queue.Client, tenant string, pending, waiting, active int64) {
	t.Helper()
	info, err := c.Tenant(bg(), tenant)
	if err != nil {
		t.Fatal(err)
	}
	if info.Pending != pending || info.Waiting != waiting || info.Active != active {
		t.Fatalf("tenant %s: pending %d, waiting %d, active %d; want %d, %d, %d", tenant, info.Pending, info.Waiting, info.Active, pending, waiting, active)
	}
}
