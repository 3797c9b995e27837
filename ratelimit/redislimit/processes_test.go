package redislimit_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/keyspace"
	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/ratelimit/redislimit"
)

// Environment of a worker process of TestExactAcrossProcesses.
const (
	procEnv    = "SLUICE_REDISLIMIT_PROC" // "1" in worker processes
	procURL    = "SLUICE_REDISLIMIT_PROC_URL"
	procPrefix = "SLUICE_REDISLIMIT_PROC_PREFIX"
	procGo     = "SLUICE_REDISLIMIT_PROC_GO" // a file whose existence starts the work
)

// The shape of the race: procs processes of procWorkers goroutines, each
// trying procCalls decisions, on limits of procQuota (and an in-flight
// limit of procMax).
const (
	procs, procWorkers, procCalls = 4, 8, 40
	procQuota, procMax            = 300, 5
	procWindow                    = 24 * time.Hour
)

// procLimits are the window limits raced for, one key each. The window is
// a day and the test moves off its boundary, so no window turns over and
// no token is refilled (one per 288 s) while it runs.
func procLimits() map[string]ratelimit.Limit {
	return map[string]ratelimit.Limit{
		"fixed":   ratelimit.Per(procQuota, procWindow),
		"sliding": ratelimit.Per(procQuota, procWindow).With(ratelimit.SlidingWindow),
		"bucket":  ratelimit.Per(procQuota, procWindow).With(ratelimit.TokenBucket),
	}
}

// runProcWorker turns the test binary into a worker when started as one:
// it races for every limit and for the in-flight limit, and prints what
// it was granted.
func runProcWorker() {
	if os.Getenv(procEnv) != "1" {
		return
	}
	if err := procWork(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(2)
	}
	os.Exit(0)
}

func procWork(out *os.File) error {
	opts, err := redis.ParseURL(os.Getenv(procURL))
	if err != nil {
		return err
	}
	c := redis.NewClient(opts)
	defer c.Close()
	s, err := redislimit.New(c, redislimit.Options{Prefix: keyspace.Prefix(os.Getenv(procPrefix))})
	if err != nil {
		return err
	}
	defer s.Close()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		if _, err := os.Stat(os.Getenv(procGo)); err == nil {
			break
		} else if time.Now().After(deadline) {
			return fmt.Errorf("no start signal: %v", err)
		}
	}
	ctx := context.Background()
	granted := map[string]*atomic.Int64{}
	for name := range procLimits() {
		granted[name] = &atomic.Int64{}
	}
	var leases, maxHeld atomic.Int64
	holders := os.Getenv(procPrefix) + "test:holders"
	var wg sync.WaitGroup
	errs := make(chan error, procWorkers)
	for range procWorkers {
		wg.Go(func() {
			for range procCalls {
				for name, l := range procLimits() {
					d, err := s.Consume(ctx, ratelimit.Request{Key: "exact:" + name, Limit: l, Cost: 1})
					if err != nil {
						errs <- err
						return
					}
					if d.Allowed {
						granted[name].Add(1)
					}
				}
				if err := procHold(ctx, s, c, holders, &leases, &maxHeld); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return err
	}
	for name, n := range granted {
		fmt.Fprintf(out, "granted %s %d\n", name, n.Load())
	}
	fmt.Fprintf(out, "leases %d maxheld %d\n", leases.Load(), maxHeld.Load())
	return nil
}

// procHold tries for a lease of the in-flight limit; holding one, it
// counts itself among the holders on a key of its own for a moment. The
// count is raised after the grant and lowered before the release, so it
// never exceeds the leases really held: a count above the limit proves a
// breach.
func procHold(ctx context.Context, s *redislimit.Store, c *redis.Client, holders string, leases, maxHeld *atomic.Int64) error {
	a, err := s.Acquire(ctx, ratelimit.AcquireRequest{Key: "exports", InFlight: ratelimit.InFlight{Max: procMax, TTL: time.Minute}})
	if err != nil || !a.Allowed {
		return err
	}
	leases.Add(1)
	n, err := c.Incr(ctx, holders).Result()
	if err != nil {
		return err
	}
	for _, h := range []int64{n, a.Held} {
		for m := maxHeld.Load(); h > m && !maxHeld.CompareAndSwap(m, h); m = maxHeld.Load() {
		}
	}
	time.Sleep(200 * time.Microsecond)
	if err := c.Decr(ctx, holders).Err(); err != nil {
		return err
	}
	_, err = s.Release(ctx, a.Lease)
	return err
}

// TestExactAcrossProcesses: four OS processes race on one Redis for three
// window limits of 300 and an in-flight limit of 5. Each window limit
// admits exactly 300 in all, and no moment sees a sixth holder.
func TestExactAcrossProcesses(t *testing.T) {
	backends := []struct {
		name string
		open func(testing.TB) backend
		url  func(backend) string
	}{
		{"miniredis", miniBackend, func(b backend) string { return "redis://" + b.opts.Addr + "/0" }},
		{"redis", realBackend, func(backend) string { return os.Getenv("SLUICE_REDIS_URL") }},
	}
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			b := be.open(t)
			awayFromBoundary(t)
			goFile := t.TempDir() + "/go"
			outs := make([]*bytes.Buffer, procs)
			cmds := make([]*exec.Cmd, procs)
			for i := range cmds {
				cmd := exec.Command(os.Args[0], "-test.run=^$")
				cmd.Env = append(os.Environ(), procEnv+"=1", procURL+"="+be.url(b), procPrefix+"="+string(b.prefix), procGo+"="+goFile)
				outs[i] = &bytes.Buffer{}
				cmd.Stdout, cmd.Stderr = outs[i], outs[i]
				if err := cmd.Start(); err != nil {
					t.Fatalf("start worker: %v", err)
				}
				cmds[i] = cmd
			}
			if err := os.WriteFile(goFile, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			totals := map[string]int64{}
			for i, cmd := range cmds {
				if err := cmd.Wait(); err != nil {
					t.Fatalf("worker %d: %v\n%s", i, err, outs[i])
				}
				procTally(t, outs[i].String(), totals)
			}
			for name := range procLimits() {
				if got := totals["granted "+name]; got != procQuota {
					t.Errorf("%s: %d processes granted %d in all, want exactly %d", name, procs, got, procQuota)
				}
			}
			if totals["maxheld"] > procMax || totals["leases"] <= procMax {
				t.Errorf("in-flight: %d leases granted, at most %d held at once; want more than %d granted and never more than %d held",
					totals["leases"], totals["maxheld"], procMax, procMax)
			}
			t.Logf("granted %v", totals)
		})
	}
}

// procTally adds a worker's "granted <name> <n>" lines to totals and keeps
// the largest "maxheld".
func procTally(t *testing.T, out string, totals map[string]int64) {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 3 && f[0] == "granted":
			n, _ := strconv.ParseInt(f[2], 10, 64)
			totals["granted "+f[1]] += n
		case len(f) == 4 && f[0] == "leases":
			n, _ := strconv.ParseInt(f[1], 10, 64)
			m, _ := strconv.ParseInt(f[3], 10, 64)
			totals["leases"] += n
			totals["maxheld"] = max(totals["maxheld"], m)
		default:
			t.Fatalf("worker printed %q", line)
		}
	}
}

// awayFromBoundary skips the race when the day's window has less than ten
// minutes left (one run in 144): it must not turn over during the race.
func awayFromBoundary(t *testing.T) {
	t.Helper()
	left := procWindow - time.Duration(time.Now().UnixNano())%procWindow
	if left < 10*time.Minute {
		t.Skipf("the day's window turns over in %s: the race would straddle it", left.Round(time.Second))
	}
}
