package redisbreaker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/clock"
)

var epoch = time.Unix(1_700_000_000, 0)

// refused is the error go-redis returns when nothing listens.
var refused = &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}

// replyError is an error Redis answered with.
type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}

// fakeRedis is the end of a hook chain: it answers each command with the
// error its answer function gives and counts what reaches it.
type fakeRedis struct {
	mu       sync.Mutex
	answer   func(cmd redis.Cmder) error
	commands []string
}

func (f *fakeRedis) process(ctx context.Context, cmd redis.Cmder) error {
	f.mu.Lock()
	f.commands = append(f.commands, cmd.Name())
	answer := f.answer
	f.mu.Unlock()
	err := answer(cmd)
	if err == nil {
		err = ctx.Err() // a caller that left gets no answer
	}
	if err != nil {
		cmd.SetErr(err)
	}
	return err
}

func (f *fakeRedis) set(answer func(redis.Cmder) error) {
	f.mu.Lock()
	f.answer = answer
	f.mu.Unlock()
}

func (f *fakeRedis) seen() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.commands...)
}

func always(err error) func(redis.Cmder) error { return func(redis.Cmder) error { return err } }

// newChain returns a breaker on a fake clock and the process function a
// client would call, ending at a fakeRedis that refuses.
func newChain(t *testing.T, o Options) (*Breaker, *clock.Fake, *fakeRedis, redis.ProcessHook) {
	t.Helper()
	clk := clock.NewFake(epoch)
	o.Clock = clk
	b, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeRedis{answer: always(refused)}
	return b, clk, f, b.ProcessHook(f.process)
}

func get(ctx context.Context, process redis.ProcessHook) error {
	return process(ctx, redis.NewStringCmd(ctx, "get", "k"))
}

func TestOpensAfterFailures(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 5} {
		b, _, f, process := newChain(t, Options{Failures: n})
		want := n
		if n == 0 {
			want = DefaultFailures
		}
		for i := range want {
			if b.Open() {
				t.Fatalf("Failures %d: open after %d failures", n, i)
			}
			if err := get(t.Context(), process); !errors.Is(err, refused) {
				t.Fatalf("Failures %d: command %d = %v, want the refusal itself", n, i, err)
			}
		}
		if !b.Open() {
			t.Fatalf("Failures %d: still closed after %d failures", n, want)
		}
		for range 100 {
			err := get(t.Context(), process)
			var oe *OpenError
			if !errors.Is(err, ErrOpen) || !errors.As(err, &oe) || !errors.Is(oe.Cause, refused) {
				t.Fatalf("Failures %d: command while open = %v, want ErrOpen naming the refusal", n, err)
			}
		}
		if got := len(f.seen()); got != want {
			t.Errorf("Failures %d: %d commands reached Redis, want %d (none while open)", n, got, want)
		}
	}
}

func TestWhatCounts(t *testing.T) {
	t.Parallel()
	deadline := fmt.Errorf("redis: %w", context.DeadlineExceeded)
	cases := []struct {
		name string
		err  error
		want outcome
	}{
		{"answer", nil, up},
		{"nil reply", redis.Nil, up},
		{"script error", replyError("ERR user_script:1: boom"), up},
		{"no script", replyError("NOSCRIPT No matching script"), up},
		{"loading", replyError("LOADING Redis is loading the dataset in memory"), down},
		{"master down", replyError("MASTERDOWN Link with MASTER is down"), down},
		{"cluster down", replyError("CLUSTERDOWN The cluster is down"), down},
		{"refused", refused, down},
		{"deadline", deadline, down},
		{"pool timeout", redis.ErrPoolTimeout, down},
		{"reset", &net.OpError{Op: "read", Err: syscall.ECONNRESET}, down},
		{"cancelled", fmt.Errorf("x: %w", context.Canceled), neutral},
		{"client closed", redis.ErrClosed, neutral},
		{"pool at its cap", redis.ErrPoolExhausted, neutral},
		{"another breaker", &OpenError{Cause: refused}, neutral},
	}
	for _, tc := range cases {
		if got := classify(tc.err); got != tc.want {
			t.Errorf("%s: classify(%v) = %d, want %d", tc.name, tc.err, got, tc.want)
		}
	}
}

// TestAnswersResetTheRun: failures must be consecutive; an answer, even an
// error reply, shows Redis is up. Cancelled calls count neither way.
func TestAnswersResetTheRun(t *testing.T) {
	t.Parallel()
	b, _, f, process := newChain(t, Options{Failures: 3})
	ctx := t.Context()
	seq := []error{refused, refused, replyError("WRONGTYPE"), refused, context.Canceled, refused}
	for i, e := range seq {
		f.set(always(e))
		_ = get(ctx, process)
		if b.Open() {
			t.Fatalf("open after step %d (%v) of %v", i, e, seq)
		}
	}
	f.set(always(refused))
	_ = get(ctx, process)
	if !b.Open() {
		t.Error("closed after a third consecutive failure")
	}
}

// TestDoneContextIsNotCounted: a command whose caller already gave up
// fails without Redis and says nothing about it.
func TestDoneContextIsNotCounted(t *testing.T) {
	t.Parallel()
	b, _, f, process := newChain(t, Options{Failures: 1})
	ctx, cancel := context.WithDeadline(t.Context(), epoch)
	defer cancel()
	f.set(func(cmd redis.Cmder) error { return context.DeadlineExceeded })
	_ = get(ctx, process)
	if b.Open() {
		t.Error("a command with an expired context opened the breaker")
	}
}

func TestProbeClosesWhenRedisAnswers(t *testing.T) {
	t.Parallel()
	b, clk, f, process := newChain(t, Options{Failures: 1, ProbeInterval: 300 * time.Millisecond})
	ctx := t.Context()
	_ = get(ctx, process)
	clk.Advance(299 * time.Millisecond)
	if err := get(ctx, process); !errors.Is(err, ErrOpen) {
		t.Fatalf("before the probe is due: %v, want ErrOpen", err)
	}
	b.probes.Wait()
	if got, want := f.seen(), []string{"get"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("commands sent before the probe was due = %v, want %v", got, want)
	}
	clk.Advance(time.Millisecond)
	// The command that finds the probe due fails at once like the others;
	// the probe goes in the background.
	if err := get(ctx, process); !errors.Is(err, ErrOpen) {
		t.Fatalf("command starting the probe: %v, want ErrOpen", err)
	}
	b.probes.Wait()
	if got, want := f.seen(), []string{"get", "ping"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("commands sent = %v, want %v (one probe, no GET while open)", got, want)
	}
	// The refused probe starts a new interval.
	clk.Advance(299 * time.Millisecond)
	if err := get(ctx, process); !errors.Is(err, ErrOpen) {
		t.Fatalf("within the next interval: %v", err)
	}
	b.probes.Wait()
	if len(f.seen()) != 2 {
		t.Fatalf("sent %v within the interval after a refused probe", f.seen())
	}
	clk.Advance(time.Millisecond)
	f.set(always(nil))
	_ = get(ctx, process)
	b.probes.Wait()
	if b.Open() {
		t.Fatal("open after a probe was answered")
	}
	if err := get(ctx, process); err != nil {
		t.Fatalf("after the probe was answered: %v, want the command sent", err)
	}
	if got, want := f.seen(), []string{"get", "ping", "ping", "get"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("commands sent = %v, want %v", got, want)
	}
}

// TestOneProbeAtATime: while a probe is in flight, commands fail fast and
// start no other probe, however much time passes.
func TestOneProbeAtATime(t *testing.T) {
	t.Parallel()
	b, clk, f, process := newChain(t, Options{Failures: 1})
	ctx := t.Context()
	_ = get(ctx, process)
	clk.Advance(DefaultProbeInterval)
	inPing, release := make(chan struct{}), make(chan struct{})
	f.set(func(cmd redis.Cmder) error {
		if cmd.Name() == "ping" {
			close(inPing)
			<-release
		}
		return nil
	})
	if err := get(ctx, process); !errors.Is(err, ErrOpen) {
		t.Fatalf("command starting the probe: %v, want ErrOpen", err)
	}
	<-inPing
	for range 10 {
		clk.Advance(DefaultProbeInterval)
		if err := get(ctx, process); !errors.Is(err, ErrOpen) {
			t.Fatalf("during the probe: %v, want ErrOpen", err)
		}
	}
	close(release)
	b.probes.Wait()
	if err := get(ctx, process); err != nil {
		t.Fatalf("after the probe: %v", err)
	}
	if got, want := f.seen(), []string{"get", "ping", "get"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("commands sent = %v, want %v", got, want)
	}
}

// TestProbeOutlivesItsCaller: the command that starts a probe may be
// cancelled at once; the probe still runs to its end.
func TestProbeOutlivesItsCaller(t *testing.T) {
	t.Parallel()
	b, clk, f, process := newChain(t, Options{Failures: 1})
	_ = get(t.Context(), process)
	clk.Advance(DefaultProbeInterval)
	inPing, release := make(chan struct{}), make(chan struct{})
	f.set(func(redis.Cmder) error { close(inPing); <-release; return nil })
	ctx, cancel := context.WithCancel(t.Context())
	_ = get(ctx, process)
	<-inPing
	cancel()
	close(release)
	b.probes.Wait()
	if b.Open() {
		t.Error("open after a probe answered, its caller having left")
	}
}

func TestPipelineFailsWhole(t *testing.T) {
	t.Parallel()
	b, err := New(Options{Failures: 1, Clock: clock.NewFake(epoch)})
	if err != nil {
		t.Fatal(err)
	}
	var sent atomic.Int64
	pipe := b.ProcessPipelineHook(func(ctx context.Context, cmds []redis.Cmder) error {
		sent.Add(int64(len(cmds)))
		for _, c := range cmds {
			c.SetErr(refused)
		}
		return refused
	})
	ctx := t.Context()
	cmds := []redis.Cmder{redis.NewCmd(ctx, "evalsha"), redis.NewCmd(ctx, "evalsha")}
	if err := pipe(ctx, cmds); !errors.Is(err, refused) || !b.Open() {
		t.Fatalf("first pipeline: %v, open %v", err, b.Open())
	}
	cmds = []redis.Cmder{redis.NewCmd(ctx, "evalsha"), redis.NewCmd(ctx, "evalsha")}
	if err := pipe(ctx, cmds); !errors.Is(err, ErrOpen) {
		t.Fatalf("pipeline while open: %v, want ErrOpen", err)
	}
	for i, c := range cmds {
		if !errors.Is(c.Err(), ErrOpen) {
			t.Errorf("command %d of the refused pipeline: %v, want ErrOpen", i, c.Err())
		}
	}
	if sent.Load() != 2 {
		t.Errorf("%d commands sent, want 2 (none while open)", sent.Load())
	}
}

func TestNewRefusesNegative(t *testing.T) {
	t.Parallel()
	for _, o := range []Options{{Failures: -1}, {ProbeInterval: -time.Second}} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v) succeeded", o)
		}
	}
}

func TestAttachSharesOnePerClient(t *testing.T) {
	t.Parallel()
	c1 := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer c1.Close()
	c2 := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer c2.Close()
	a, err := Attach(c1, Options{Failures: 7})
	if err != nil {
		t.Fatal(err)
	}
	again, err := Attach(c1, Options{Failures: 9})
	if err != nil || again != a || again.failures != 7 {
		t.Errorf("second Attach on one client = %p (failures %d), %v; want the first breaker %p", again, again.failures, err, a)
	}
	other, err := Attach(c2, Options{})
	if err != nil || other == a {
		t.Errorf("Attach on another client = %p, %v; want a new breaker", other, err)
	}
}

func TestTrip(t *testing.T) {
	t.Parallel()
	b, clk, f, process := newChain(t, Options{})
	b.Trip(refused)
	if err := get(t.Context(), process); !errors.Is(err, ErrOpen) || len(f.seen()) != 0 {
		t.Fatalf("after Trip: %v, %v sent; want ErrOpen and nothing sent", err, f.seen())
	}
	clk.Advance(DefaultProbeInterval)
	f.set(always(nil))
	_ = get(t.Context(), process)
	b.probes.Wait()
	if err := get(t.Context(), process); err != nil || b.Open() {
		t.Errorf("after a probe is due and answered: %v, open %v", err, b.Open())
	}
}

// TestFailedDialsCount: failed dials open the breaker on their own, while
// the command that made them may still be retrying.
func TestFailedDialsCount(t *testing.T) {
	t.Parallel()
	b, err := New(Options{Failures: 3})
	if err != nil {
		t.Fatal(err)
	}
	var dials int
	dial := b.DialHook(func(context.Context, string, string) (net.Conn, error) { dials++; return nil, refused })
	for i := range 3 {
		if b.Open() {
			t.Fatalf("open after %d failed dials", i)
		}
		if _, err := dial(t.Context(), "tcp", "127.0.0.1:1"); !errors.Is(err, refused) {
			t.Fatalf("dial %d = %v, want the refusal", i, err)
		}
	}
	if !b.Open() {
		t.Error("closed after 3 failed dials")
	}
	// Dials still go: go-redis's own background dial must reach Redis.
	_, _ = dial(t.Context(), "tcp", "127.0.0.1:1")
	if dials != 4 {
		t.Errorf("%d dials made, want 4", dials)
	}
}

// BenchmarkHook measures what the breaker adds to a command: closed (the
// normal case, which must not allocate) and open (a refusal).
func BenchmarkHook(b *testing.B) {
	for _, open := range []bool{false, true} {
		name := "closed"
		if open {
			name = "open"
		}
		b.Run(name, func(b *testing.B) {
			br, err := New(Options{Failures: 1})
			if err != nil {
				b.Fatal(err)
			}
			var answer error
			if open {
				br.Trip(refused)
				answer = refused // probes fail: it stays open
			}
			process := br.ProcessHook(func(context.Context, redis.Cmder) error { return answer })
			ctx := context.Background()
			cmd := redis.NewStringCmd(ctx, "get", "k")
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					_ = process(ctx, cmd)
				}
			})
			b.StopTimer()
			br.probes.Wait()
		})
	}
}
