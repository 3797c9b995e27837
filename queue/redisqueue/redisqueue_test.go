package redisqueue_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/keyspace"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/redisqueue"
)

var epoch = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// forEachServer runs fn on miniredis and, when SLUICE_REDIS_URL is set,
// on real Redis.
func forEachServer(t *testing.T, fn func(t *testing.T, s server)) {
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) { fn(t, srv.open(t)) })
	}
}

func mustEnqueue(t *testing.T, c *queue.Client, s queue.JobSpec) *queue.Job {
	t.Helper()
	j, err := c.Enqueue(context.Background(), s)
	if err != nil {
		t.Fatalf("Enqueue(%+v): %v", s, err)
	}
	return j
}

func keysUnder(t *testing.T, s server, c redis.UniversalClient) []string {
	t.Helper()
	got, err := c.Keys(context.Background(), string(s.prefix)+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	return got
}

// TestKeyLayout checks that every key of a queue lives under the prefix
// with the escaped queue name as its hash tag (one Cluster slot), and that
// ids carry the sequence and the queue.
func TestKeyLayout(t *testing.T) {
	forEachServer(t, func(t *testing.T, s server) {
		clk := clock.NewFake(epoch)
		c := s.client(t)
		b := s.backendOn(t, c, withClock(clk))
		cl := queue.NewClient(b)
		const q = "mail/eu{1}"
		j := mustEnqueue(t, cl, queue.JobSpec{Queue: q, Kind: "send", UniqueKey: "u:1"})
		mustEnqueue(t, cl, queue.JobSpec{Queue: q, Kind: "send", RunAt: epoch.Add(time.Hour)})
		l, err := b.Lease(context.Background(), backend.LeaseRequest{Queues: []string{q}, Max: 1, LeaseFor: time.Minute})
		if err != nil || len(l) != 1 {
			t.Fatalf("Lease = %v, %v", l, err)
		}
		if _, err := b.Fail(context.Background(), j.ID, l[0].Token, backend.Failure{Error: "x"}); err != nil {
			t.Fatal(err)
		}
		esc := keyspace.Escape(q)
		// In the id, '~' stands for the key's '%': ids go into URL paths.
		if want := regexp.MustCompile(`^[0-9]{16}-mail~2Feu~7B1~7D$`); !want.MatchString(j.ID) {
			t.Errorf("id %q does not match %s", j.ID, want)
		}
		tagged := string(s.prefix) + "queue:{" + esc + "}:"
		for _, k := range keysUnder(t, s, c) {
			if k != string(s.prefix)+"queues" && !strings.HasPrefix(k, tagged) {
				t.Errorf("key %q is not under %q", k, tagged)
			}
		}
		for _, name := range []string{"scheduled", "retrying", "jobs", "seq", "unique:u%3A1"} {
			if n, _ := c.Exists(context.Background(), tagged+name).Result(); n != 1 {
				t.Errorf("key %s is missing", tagged+name)
			}
		}
	})
}

func TestBadIDs(t *testing.T) {
	s := miniServer(t)
	b := s.backend(t, redisqueue.Options{})
	ctx := context.Background()
	for _, id := range []string{"", "1", "abc", "123456789012345-q", "12345678901234567q", "123456789012345x-q", "1234567890123456-", "1234567890123456-%zz",
		"1234567890123456-a~3a", "1234567890123456-a~41", "1234567890123456-a~3", "1234567890123456-a~", "1234567890123456-a:b"} {
		if _, err := b.Get(ctx, id); !errors.Is(err, queue.ErrNotFound) {
			t.Errorf("Get(%q) error = %v, want ErrNotFound", id, err)
		}
		if err := b.Complete(ctx, id, "t", nil); !errors.Is(err, queue.ErrNotFound) {
			t.Errorf("Complete(%q) error = %v, want ErrNotFound", id, err)
		}
	}
	if _, err := b.List(ctx, queue.ListFilter{Cursor: "nope"}); !errors.Is(err, queue.ErrInvalidArgument) {
		t.Errorf("List(bad cursor) error = %v, want ErrInvalidArgument", err)
	}
}

func TestNewRejects(t *testing.T) {
	s := miniServer(t)
	c := s.client(t)
	cases := []struct {
		name  string
		c     redis.UniversalClient
		opts  redisqueue.Options
		field string
	}{
		{"nil client", nil, redisqueue.Options{}, "client"},
		{"bad prefix", c, redisqueue.Options{Prefix: "no colon"}, "Options.Prefix"},
		{"negative batch", c, redisqueue.Options{MaxBatch: -1}, "Options"},
	}
	for _, tc := range cases {
		_, err := redisqueue.New(tc.c, tc.opts)
		var ia *queue.InvalidArgumentError
		if !errors.As(err, &ia) || ia.Field != tc.field {
			t.Errorf("%s: error = %v, want an invalid %s", tc.name, err, tc.field)
		}
	}
}

// policyHook answers CONFIG GET maxmemory-policy with a set policy, or an
// error, as a managed Redis with a different policy or no CONFIG would.
type policyHook struct {
	policy string
	err    error
}

func (h policyHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h policyHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h policyHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		cg, ok := cmd.(*redis.MapStringStringCmd)
		if !ok || cmd.Name() != "config" {
			return next(ctx, cmd)
		}
		if h.err != nil {
			cg.SetErr(h.err)
			return h.err
		}
		cg.SetVal(map[string]string{"maxmemory-policy": h.policy})
		return nil
	}
}

func TestEvictionWarning(t *testing.T) {
	s := miniServer(t)
	cases := []struct {
		name string
		hook policyHook
		warn bool
	}{
		{"noeviction", policyHook{policy: "noeviction"}, false},
		{"allkeys-lru", policyHook{policy: "allkeys-lru"}, true},
		{"volatile-ttl", policyHook{policy: "volatile-ttl"}, true},
		{"CONFIG disabled", policyHook{err: errors.New("ERR unknown command 'CONFIG'")}, false},
	}
	for _, tc := range cases {
		var buf bytes.Buffer
		log := slog.New(slog.NewTextHandler(&buf, nil))
		c := s.client(t)
		c.AddHook(tc.hook)
		b, err := redisqueue.New(c, redisqueue.Options{Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		b.Close()
		got := strings.Contains(buf.String(), "maxmemory-policy")
		if got != tc.warn || (tc.warn && !strings.Contains(buf.String(), tc.hook.policy)) {
			t.Errorf("%s: log = %q, want warning %v", tc.name, buf.String(), tc.warn)
		}
	}
}

// TestCleanupFreesMemory checks that once finished jobs pass their
// retention nothing of them is left in Redis: the job hashes, their error
// lists, index entries and unique keys all go.
func TestCleanupFreesMemory(t *testing.T) {
	forEachServer(t, func(t *testing.T, s server) {
		clk := clock.NewFake(epoch)
		c := s.client(t)
		b := s.backendOn(t, c, withClock(clk))
		cl := queue.NewClient(b)
		ctx := context.Background()
		for i := 0; i < 30; i++ {
			mustEnqueue(t, cl, queue.JobSpec{Queue: "q", Kind: "k", UniqueKey: fmt.Sprint("u", i), UniqueFor: time.Hour * time.Duration(i%2)})
		}
		for i := 0; ; i++ {
			ls, err := b.Lease(ctx, backend.LeaseRequest{Queues: []string{"q"}, Max: 1, LeaseFor: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if len(ls) == 0 {
				break
			}
			id, tok := ls[0].Job.ID, ls[0].Token
			switch i % 3 {
			case 0:
				err = b.Complete(ctx, id, tok, []byte("r"))
			case 1:
				_, err = b.Fail(ctx, id, tok, backend.Failure{Error: "e", Permanent: true})
			case 2:
				_, err = b.Fail(ctx, id, tok, backend.Failure{Error: "e", RetryIn: time.Hour})
				if err == nil {
					_, err = cl.Cancel(ctx, id)
				}
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		clk.Advance(8 * 24 * time.Hour)
		n, err := b.Cleanup(ctx, backend.CleanupRequest{Retention: queue.Retention{}.WithDefaults()})
		if err != nil || n != 30 {
			t.Fatalf("Cleanup = %d, %v; want 30", n, err)
		}
		// What stays: the queue's sequence, its virtual time (the fair
		// order's clock, kept like the sequence), and the registry.
		tagged := string(s.prefix) + "queue:{q}:"
		want := []string{tagged + "sched", tagged + "seq", string(s.prefix) + "queues"}
		if got := keysUnder(t, s, c); !slices.Equal(got, want) {
			t.Fatalf("keys after cleanup = %q, want only %q", got, want)
		}
	})
}

// TestNotifyAcrossProcesses checks that a backend on another client (as in
// another process) wakes when a job becomes ready, and that the enqueuing
// process wakes its own subscribers too.
func TestNotifyAcrossProcesses(t *testing.T) {
	forEachServer(t, func(t *testing.T, s server) {
		worker := s.backend(t, redisqueue.Options{})
		producer := s.backend(t, redisqueue.Options{})
		remote, stopRemote := worker.Subscribe([]string{"other", "jobs"})
		defer stopRemote()
		local, stopLocal := producer.Subscribe([]string{"jobs"})
		defer stopLocal()
		// The subscription is live once a message published after it
		// arrives; keep enqueuing until one does.
		cl := queue.NewClient(producer)
		mustEnqueue(t, cl, queue.JobSpec{Queue: "jobs", Kind: "k"})
		select {
		case <-local:
		case <-time.After(testutil.Patience):
			t.Fatal("the enqueuing process was not woken")
		}
		testutil.Eventually(t, "the other process to be woken", func() bool {
			select {
			case <-remote:
				return true
			case <-time.After(50 * time.Millisecond):
				// The ready set is not empty: empty it so the next
				// enqueue publishes again.
				if _, err := worker.Lease(context.Background(), backend.LeaseRequest{Queues: []string{"jobs"}, Max: 100, LeaseFor: time.Minute}); err != nil {
					t.Fatal(err)
				}
				mustEnqueue(t, cl, queue.JobSpec{Queue: "jobs", Kind: "k"})
				return false
			}
		})
	})
}

func TestClosed(t *testing.T) {
	s := miniServer(t)
	b := s.backend(t, redisqueue.Options{})
	ch, stop := b.Subscribe([]string{"q"})
	defer stop()
	if err := b.Ping(context.Background()); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := b.Enqueue(ctx, []queue.JobSpec{{Queue: "q", Kind: "k"}}); !errors.Is(err, queue.ErrClosed) {
		t.Errorf("Enqueue after Close: %v, want ErrClosed", err)
	}
	if _, err := b.Lease(ctx, backend.LeaseRequest{Queues: []string{"q"}, Max: 1, LeaseFor: time.Second}); !errors.Is(err, queue.ErrClosed) {
		t.Errorf("Lease after Close: %v, want ErrClosed", err)
	}
	select {
	case <-ch:
		t.Error("a closed backend woke a subscriber")
	default:
	}
	if err := b.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := b.Ping(ctx); !errors.Is(err, queue.ErrClosed) {
		t.Errorf("Ping after Close: %v, want ErrClosed", err)
	}
}

// TestStoreFault checks that a Redis that is gone yields an error naming
// the package and the operation, matching none of the queue's sentinels.
func TestStoreFault(t *testing.T) {
	for _, batching := range []bool{true, false} {
		s := miniServer(t)
		s.opts.DialerRetries, s.opts.MaxRetries = 1, -1 // fail fast
		b := s.backend(t, redisqueue.Options{DisableBatching: !batching})
		s.mini.Close()
		ctx := context.Background()
		_, err := b.Lease(ctx, backend.LeaseRequest{Queues: []string{"q"}, Max: 1, LeaseFor: time.Second})
		if err == nil || !strings.HasPrefix(err.Error(), "redisqueue: lease: ") {
			t.Errorf("batching %v: Lease on a dead Redis: %v", batching, err)
		}
		for _, s := range []error{queue.ErrNotFound, queue.ErrLeaseLost, queue.ErrClosed} {
			if errors.Is(err, s) {
				t.Errorf("batching %v: fault %v matches %v", batching, err, s)
			}
		}
	}
}

// TestExtremes checks that scores and times keep their exact values at the
// ends of their ranges: the largest priority, a run time near the end of
// the century a spec may reach (queue.MaxDuration).
func TestExtremes(t *testing.T) {
	forEachServer(t, func(t *testing.T, s server) {
		clk := clock.NewFake(epoch)
		b := s.backend(t, withClock(clk))
		cl := queue.NewClient(b)
		ctx := context.Background()
		far := time.Date(2120, 7, 8, 9, 10, 11, 123456000, time.UTC)
		low := mustEnqueue(t, cl, queue.JobSpec{Queue: "q", Kind: "k", Priority: queue.MaxPriority})
		high := mustEnqueue(t, cl, queue.JobSpec{Queue: "q", Kind: "k", Priority: queue.MaxPriority - 1})
		later := mustEnqueue(t, cl, queue.JobSpec{Queue: "q", Kind: "k", RunAt: far})
		got, err := b.Get(ctx, later.ID)
		if err != nil || !got.RunAt.Equal(far) || got.State != queue.StateScheduled {
			t.Fatalf("Get(far job) = %+v, %v; want RunAt %v exactly", got, err, far)
		}
		ls, err := b.Lease(ctx, backend.LeaseRequest{Queues: []string{"q"}, Max: 5, LeaseFor: time.Minute})
		if err != nil || len(ls) != 2 || ls[0].Job.ID != high.ID || ls[1].Job.ID != low.ID {
			t.Fatalf("Lease = %v, %v; want %s then %s", ls, err, high.ID, low.ID)
		}
	})
}

// TestListAcrossQueues pages through several queues with filters and a
// small scan budget, so that pages come back short and end at the point
// nearest the start any queue was read to: every job appears once, in id
// order (or its reverse, newest first).
func TestListAcrossQueues(t *testing.T) {
	defer redisqueue.SetListBudget(3)()
	cases := []struct {
		name string
		f    queue.ListFilter
		want func(j *queue.Job) bool
	}{
		{"pending", queue.ListFilter{States: []queue.State{queue.StatePending}},
			func(j *queue.Job) bool { return j.State == queue.StatePending }},
		{"pending newest", queue.ListFilter{States: []queue.State{queue.StatePending}, Order: queue.NewestFirst},
			func(j *queue.Job) bool { return j.State == queue.StatePending }},
		{"tenant newest", queue.ListFilter{Tenant: "t1", Order: queue.NewestFirst},
			func(j *queue.Job) bool { return j.Tenant == "t1" }},
		{"kind and tenant", queue.ListFilter{Tenant: "t0", Kind: "k1"},
			func(j *queue.Job) bool { return j.Tenant == "t0" && j.Kind == "k1" }},
		{"everything newest", queue.ListFilter{Order: queue.NewestFirst},
			func(j *queue.Job) bool { return true }},
	}
	forEachServer(t, func(t *testing.T, s server) {
		clk := clock.NewFake(epoch)
		b := s.backend(t, withClock(clk))
		cl := queue.NewClient(b)
		var jobs []*queue.Job
		for i := 0; i < 40; i++ {
			q := []string{"a", "b", "c"}[i%3]
			st := queue.JobSpec{Queue: q, Kind: fmt.Sprintf("k%d", i%2), Tenant: fmt.Sprintf("t%d", i%5)}
			if i%4 == 0 {
				st.RunAt = epoch.Add(time.Hour)
			}
			jobs = append(jobs, mustEnqueue(t, cl, st))
			if i%5 == 0 {
				clk.Advance(time.Microsecond)
			}
		}
		for _, c := range cases {
			var want []string
			for _, j := range jobs {
				if c.want(j) {
					want = append(want, j.ID)
				}
			}
			slices.Sort(want) // ids sort by sequence (enqueue time), then queue
			if c.f.Order.Newest() {
				slices.Reverse(want)
			}
			if got := listPages(t, cl, c.f, 4); !slices.Equal(got, want) {
				t.Fatalf("%s: listed %d jobs %v\nwant %d %v", c.name, len(got), got, len(want), want)
			}
		}
	})
}

// listPages pages through f, limit jobs a page, and returns the ids.
func listPages(t *testing.T, cl *queue.Client, f queue.ListFilter, limit int) []string {
	t.Helper()
	f.Limit = limit
	var got []string
	for pages := 0; ; pages++ {
		p, err := cl.List(context.Background(), f)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Jobs) > limit {
			t.Fatalf("page of %d jobs, limit %d", len(p.Jobs), limit)
		}
		for _, j := range p.Jobs {
			got = append(got, j.ID)
		}
		if p.Next == "" {
			return got
		}
		if pages > 200 {
			t.Fatal("List never ends")
		}
		f.Cursor = p.Next
	}
}
