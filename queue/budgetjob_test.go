package queue_test

import (
	"context"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/budget"
	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/ratelimit/memlimit"
	"github.com/sluicehq/sluice/ratelimit/redislimit"
)

// limitStores are the rate-limit stores budgets are tested on: memlimit,
// and redislimit on miniredis. open returns one more store on the same
// counters (another process); every store counts on clk.
var limitStores = []struct {
	name string
	open func(t *testing.T, clk *clock.Fake) func() ratelimit.Admitter
}{
	{"memlimit", func(t *testing.T, clk *clock.Fake) func() ratelimit.Admitter {
		st := memlimit.New(memlimit.Options{Clock: clk})
		t.Cleanup(func() { _ = st.Close() })
		return func() ratelimit.Admitter { return st }
	}},
	{"miniredis", func(t *testing.T, clk *clock.Fake) func() ratelimit.Admitter {
		m := miniredis.RunT(t)
		return func() ratelimit.Admitter {
			c := redis.NewClient(&redis.Options{Addr: m.Addr()})
			t.Cleanup(func() { _ = c.Close() })
			st, err := redislimit.New(c, redislimit.Options{Clock: clk})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close() })
			return st
		}
	}},
}

// forEachLimitStore runs fn on each of limitStores, with a clock that
// stands still until the test moves it, so that counts are exact.
func forEachLimitStore(t *testing.T, fn func(t *testing.T, clk *clock.Fake, open func() ratelimit.Admitter)) {
	for _, ls := range limitStores {
		t.Run(ls.name, func(t *testing.T) {
			clk := clock.NewFake(time.Unix(1_700_000_000, 0))
			fn(t, clk, ls.open(t, clk))
		})
	}
}

// newJobBudgets returns budgets defined as defs on st.
func newJobBudgets(t *testing.T, clk *clock.Fake, st ratelimit.Admitter, defs map[string]budget.Config) *budget.Budgets {
	t.Helper()
	b, err := budget.New(budget.Options{Store: st, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Replace(defs); err != nil {
		t.Fatal(err)
	}
	return b
}

func runWorker(t *testing.T, w *queue.Worker) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
}

func tokensUsed(t *testing.T, b *budget.Budgets, name string) int64 {
	t.Helper()
	st, err := b.Status(context.Background(), name, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range st.Limits {
		if l.Limit == "tokens" && l.Scope == budget.ScopeTotal {
			return l.Used
		}
	}
	t.Fatalf("no tokens limit in %+v", st)
	return 0
}

// TestBudgetSettleThroughJob: a job estimated at 1,000 tokens that
// reports 3,000 is charged 3,000; one that reports 200 has 800 refunded;
// a job that reports nothing is settled at its estimate; plain jobs claim
// nothing.
func TestBudgetSettleThroughJob(t *testing.T) {
	forEachLimitStore(t, testBudgetSettleThroughJob)
}

func testBudgetSettleThroughJob(t *testing.T, clk *clock.Fake, open func() ratelimit.Admitter) {
	b := newJobBudgets(t, clk, open(), map[string]budget.Config{
		"llm": {Limits: budget.Limits{Units: map[string]budget.Rate{"tokens": budget.PerMinute(100_000)}, InFlight: 5}},
	})
	sq := openSQLite(t)
	w := queue.NewWorker(sq, queue.WorkerConfig{Queues: []string{"q"}, PollInterval: 10 * time.Millisecond, CleanupEvery: -1,
		Budgets: queue.JobBudgets{Budgets: b, Defaults: func(q, kind string) map[string]budget.Cost {
			if kind == "plain" {
				return nil
			}
			return map[string]budget.Cost{"llm": {"tokens": 1000}}
		}}})
	var usageErr sync.Map
	w.Handle("call", queue.HandlerFunc(func(ctx context.Context, job *queue.Job) ([]byte, error) {
		var used int64
		switch string(job.Payload) {
		case `"3000"`:
			used = 3000
		case `"200"`:
			used = 200
		default:
			return nil, nil
		}
		// Two reports add up.
		_ = job.ReportUsage(ctx, map[string]budget.Cost{"llm": {"tokens": used / 2}})
		return nil, queue.ReportUsage(ctx, map[string]budget.Cost{"llm": {"tokens": used - used/2}})
	}))
	w.Handle("plain", queue.HandlerFunc(func(ctx context.Context, job *queue.Job) ([]byte, error) {
		usageErr.Store(job.ID, queue.ReportUsage(ctx, map[string]budget.Cost{"llm": {"tokens": 1}}))
		return nil, nil
	}))
	runWorker(t, w)
	c := queue.NewClient(sq)
	run := func(kind, payload string) string {
		t.Helper()
		j, err := c.Enqueue(context.Background(), queue.JobSpec{Queue: "q", Kind: kind, Payload: []byte(payload)})
		if err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, "the job to complete", func() bool {
			got, err := c.Get(context.Background(), j.ID)
			return err == nil && got.State == queue.StateCompleted
		})
		return j.ID
	}
	run("call", `"3000"`)
	testutil.Eventually(t, "the settlement", func() bool { return tokensUsed(t, b, "llm") == 3000 })
	run("call", `"200"`)
	testutil.Eventually(t, "the refund", func() bool { return tokensUsed(t, b, "llm") == 3200 })
	run("call", `"none"`)
	testutil.Eventually(t, "the estimate", func() bool { return tokensUsed(t, b, "llm") == 4200 })
	id := run("plain", `""`)
	if v, _ := usageErr.Load(id); v != queue.ErrNoBudgets {
		t.Errorf("ReportUsage in a plain job = %v, want ErrNoBudgets", v)
	}
	if got := tokensUsed(t, b, "llm"); got != 4200 {
		t.Errorf("tokens used after a plain job = %d, want 4200", got)
	}
	st, _ := b.Status(context.Background(), "llm", "")
	for _, l := range st.Limits {
		if l.Limit == budget.LimitInFlight && l.Used != 0 {
			t.Errorf("in flight after every job ended = %d, want 0", l.Used)
		}
	}
}

// TestBudget429HoldsFleet: one 429 with Retry-After: 2, seen through the
// budget's client in a handler, closes the budget: the other jobs on it
// wait (scheduled, no attempt spent, the hold explained) and start only
// once the two seconds have passed on the budget's clock.
func TestBudget429HoldsFleet(t *testing.T) {
	forEachLimitStore(t, testBudget429HoldsFleet)
}

func testBudget429HoldsFleet(t *testing.T, clk *clock.Fake, open func() ratelimit.Admitter) {
	defs := map[string]budget.Config{"stub": {Limits: budget.Limits{Requests: budget.PerSecond(100)}}}
	b := newJobBudgets(t, clk, open(), defs)
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusTooManyRequests)
		}
	}))
	defer srv.Close()
	sq := openSQLite(t)
	var mu sync.Mutex
	holds := map[string]budget.Hold{}
	cfg := queue.WorkerConfig{Queues: []string{"q"}, PollInterval: 10 * time.Millisecond, CleanupEvery: -1, Concurrency: 1,
		Budgets: queue.JobBudgets{Budgets: b,
			Claim: func(*queue.Job) budget.Claim { return budget.Claim{Costs: map[string]budget.Cost{"stub": {}}} },
			OnHold: func(j *queue.Job, h budget.Hold) {
				mu.Lock()
				defer mu.Unlock()
				holds[j.ID] = h
			}}}
	var started atomic.Int64
	handler := queue.HandlerFunc(func(ctx context.Context, job *queue.Job) ([]byte, error) {
		started.Add(1)
		resp, err := b.Client("stub").Get(srv.URL)
		if err != nil {
			return nil, err
		}
		_ = resp.Body.Close()
		return nil, nil
	})
	c := queue.NewClient(sq)
	first, err := c.Enqueue(context.Background(), queue.JobSpec{Queue: "q", Kind: "call"})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 { // three workers, each with its own store client: one fleet
		cfg.Budgets.Budgets = newJobBudgets(t, clk, open(), defs)
		w := queue.NewWorker(sq, cfg)
		w.Handle("call", handler)
		runWorker(t, w)
	}
	testutil.Eventually(t, "the first job to complete", func() bool {
		j, err := c.Get(context.Background(), first.ID)
		return err == nil && j.State == queue.StateCompleted
	})
	var ids []string
	for range 3 {
		j, err := c.Enqueue(context.Background(), queue.JobSpec{Queue: "q", Kind: "call"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, j.ID)
	}
	testutil.Eventually(t, "every other job to be held", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(holds) == 3
	})
	mu.Lock()
	for id, h := range holds {
		if h.Budget != "stub" || h.Limit != budget.LimitClosed || h.RetryAfter != 2*time.Second {
			t.Errorf("hold of %s = %+v, want stub closed for 2s", id, h)
		}
	}
	mu.Unlock()
	// OnHold is told before the job is given back: wait for that.
	for _, id := range ids {
		testutil.Eventually(t, "the held job to wait with no attempt spent", func() bool {
			j, err := c.Get(context.Background(), id)
			return err == nil && j.State == queue.StateScheduled && j.Attempt == 0
		})
	}
	if n := started.Load(); n != 1 {
		t.Fatalf("%d jobs started while the budget was closed, want only the first", n)
	}
	clk.Advance(2 * time.Second)
	for _, id := range ids {
		testutil.Eventually(t, "the held job to run once the budget opens", func() bool {
			j, err := c.Get(context.Background(), id)
			return err == nil && j.State == queue.StateCompleted && j.Attempt == 1
		})
	}
}
