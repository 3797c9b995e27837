package dashboard

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/redisqueue"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
)

func newQueue(t *testing.T) *queue.Client {
	t.Helper()
	b, err := sqlitequeue.Open(filepath.Join(t.TempDir(), "jobs.db"), sqlitequeue.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return queue.NewClient(b)
}

func enqueue(t *testing.T, c *queue.Client, specs ...queue.JobSpec) {
	t.Helper()
	if _, err := c.EnqueueBatch(context.Background(), specs); err != nil {
		t.Fatal(err)
	}
}

func rowsOf(b *Breakdown) string {
	var out []string
	for _, r := range b.Rows {
		out = append(out, fmt.Sprintf("%s:%d/%d", r.Key, r.Total, r.Counts[queue.StatePending]))
	}
	return strings.Join(out, " ")
}

func TestCount(t *testing.T) {
	t.Parallel()
	c := newQueue(t)
	ctx := context.Background()
	var specs []queue.JobSpec
	for i := range 25 {
		specs = append(specs, queue.JobSpec{Queue: []string{"mail", "crawl"}[i%2], Kind: "k", Tenant: fmt.Sprintf("t%d", i%3)})
	}
	enqueue(t, c, specs...)
	page, err := c.List(ctx, queue.ListFilter{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Cancel(ctx, page.Jobs[0].ID); err != nil { // t0, mail
		t.Fatal(err)
	}
	tests := []struct {
		req       BreakdownRequest
		want      string
		scanned   int
		truncated bool
	}{
		{BreakdownRequest{By: ByTenant}, "t0:9/8 t1:8/8 t2:8/8", 25, false},
		{BreakdownRequest{By: ByTenant, States: []queue.State{queue.StatePending}}, "t0:8/8 t1:8/8 t2:8/8", 24, false},
		{BreakdownRequest{By: ByQueue}, "mail:13/12 crawl:12/12", 25, false},
		{BreakdownRequest{By: ByKind, Queue: "crawl"}, "k:12/12", 12, false},
		{BreakdownRequest{By: ByTenant, MaxScan: 10}, "t0:4/3 t1:3/3 t2:3/3", 10, true},
		{BreakdownRequest{By: ByGroup, Queue: "none"}, "", 0, false},
	}
	for _, tt := range tests {
		got, err := Count(ctx, c, tt.req)
		if err != nil {
			t.Fatalf("%+v: %v", tt.req, err)
		}
		if rowsOf(got) != tt.want || got.Scanned != tt.scanned || got.Truncated != tt.truncated {
			t.Errorf("%+v: got %q scanned %d truncated %v, want %q %d %v", tt.req, rowsOf(got), got.Scanned, got.Truncated, tt.want, tt.scanned, tt.truncated)
		}
	}
}

func TestCountRejectsBadRequests(t *testing.T) {
	t.Parallel()
	c := newQueue(t)
	tests := []struct {
		req  BreakdownRequest
		want string
	}{
		{BreakdownRequest{}, `dashboard: by must be one of tenant, group, kind, queue; got ""`},
		{BreakdownRequest{By: ByTenant, States: []queue.State{"done"}}, `dashboard: unknown state "done"`},
		{BreakdownRequest{By: ByTenant, MaxScan: -1}, "dashboard: max scan must not be negative, got -1"},
		{BreakdownRequest{By: ByTenant, MaxCalls: -1}, "dashboard: max calls must not be negative, got -1"},
	}
	for _, tt := range tests {
		if _, err := Count(context.Background(), c, tt.req); err == nil || err.Error() != tt.want {
			t.Errorf("%+v: got %v, want %q", tt.req, err, tt.want)
		}
	}
}

// countingLister counts List calls, to see the cache at work.
type countingLister struct {
	Lister
	calls atomic.Int64
}

func (c *countingLister) List(ctx context.Context, f queue.ListFilter) (*queue.Page, error) {
	c.calls.Add(1)
	return c.Lister.List(ctx, f)
}

func TestBreakdownsCache(t *testing.T) {
	t.Parallel()
	c := newQueue(t)
	enqueue(t, c, queue.JobSpec{Queue: "q", Kind: "k", Tenant: "a"})
	l := &countingLister{Lister: c}
	clk := newFake()
	b := NewBreakdowns(l, time.Second, clk.now)
	ctx := context.Background()
	req := BreakdownRequest{By: ByTenant}
	first, err := b.Count(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	enqueue(t, c, queue.JobSpec{Queue: "q", Kind: "k", Tenant: "a"})
	clk.advance(500 * time.Millisecond)
	cached, _ := b.Count(ctx, req)
	if cached != first || l.calls.Load() != 1 {
		t.Errorf("within the ttl: rows %q, %d scans; want the first answer, 1 scan", rowsOf(cached), l.calls.Load())
	}
	if _, err := b.Count(ctx, BreakdownRequest{By: ByQueue}); err != nil || l.calls.Load() != 2 {
		t.Errorf("another request: %v, %d scans, want 2", err, l.calls.Load())
	}
	clk.advance(time.Second)
	fresh, _ := b.Count(ctx, req)
	if rowsOf(fresh) != "a:2/2" || l.calls.Load() != 3 {
		t.Errorf("after the ttl: %q, %d scans", rowsOf(fresh), l.calls.Load())
	}
	if _, err := b.Count(ctx, BreakdownRequest{By: "x"}); err == nil {
		t.Error("bad request accepted")
	}
}

// TestCountCapsCalls counts on the Redis store, whose filtered pages look
// at a bounded number of jobs per call and so come back short: a count of
// a rare state makes several calls, and MaxCalls stops it early with the
// counts marked as lower bounds.
func TestCountCapsCalls(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	rc := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { rc.Close() })
	b, err := redisqueue.New(rc, redisqueue.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	c := queue.NewClient(b)
	ctx := context.Background()
	// 2,500 jobs in one queue: a filtered call looks at 1,000 of them.
	for range 25 {
		specs := make([]queue.JobSpec, 100)
		for i := range specs {
			specs[i] = queue.JobSpec{Queue: "q", Kind: "k"}
		}
		enqueue(t, c, specs...)
	}
	if ls, err := b.Lease(ctx, backend.LeaseRequest{Queues: []string{"q"}, Max: 1, LeaseFor: time.Minute}); err != nil || len(ls) != 1 {
		t.Fatalf("Lease = %d jobs, %v; want 1", len(ls), err)
	}
	active := []queue.State{queue.StateActive}
	tests := []struct {
		req       BreakdownRequest
		calls     int
		truncated bool
	}{
		{BreakdownRequest{By: ByQueue, States: active}, 3, false},
		{BreakdownRequest{By: ByQueue, States: active, MaxCalls: 2}, 2, true},
		{BreakdownRequest{By: ByQueue, States: active, MaxCalls: 1}, 1, true},
	}
	for _, tt := range tests {
		l := &countingLister{Lister: c}
		got, err := Count(ctx, l, tt.req)
		if err != nil {
			t.Fatalf("%+v: %v", tt.req, err)
		}
		if rowsOf(got) != "q:1/0" || got.Scanned != 1 || got.Calls != tt.calls || got.Truncated != tt.truncated ||
			l.calls.Load() != int64(tt.calls) {
			t.Errorf("%+v: got %q scanned %d calls %d (made %d) truncated %v, want q:1/0 1 %d %v",
				tt.req, rowsOf(got), got.Scanned, got.Calls, l.calls.Load(), got.Truncated, tt.calls, tt.truncated)
		}
	}
}
