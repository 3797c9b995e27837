package queue_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/keyspace"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/redisqueue"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
)

// The bounds of a spec, with the whole message a caller reads.
func TestValidateSpecBounds(t *testing.T) {
	t.Parallel()
	far := time.Now().Add(queue.MaxDuration + time.Hour)
	cases := []struct {
		name string
		edit func(s *queue.JobSpec)
		want string // "" when valid
	}{
		{"attempts at the bound", func(s *queue.JobSpec) { s.MaxAttempts = queue.MaxAttemptsLimit }, ""},
		{"attempts over the bound", func(s *queue.JobSpec) { s.MaxAttempts = 2_000_000_000 },
			"queue: JobSpec.MaxAttempts must be between 0 (the default, 25) and 1000, got 2000000000"},
		{"timeout at the bound", func(s *queue.JobSpec) { s.Timeout = queue.MaxDuration }, ""},
		{"timeout overflow", func(s *queue.JobSpec) { s.Timeout = time.Duration(1<<63 - 1) },
			"queue: JobSpec.Timeout must be between 0 and 876000h0m0s (100 years), got 2562047h47m16.854775807s"},
		{"unique for overflow", func(s *queue.JobSpec) { s.UniqueKey, s.UniqueFor = "u", queue.MaxDuration+1 },
			"queue: JobSpec.UniqueFor must be between 0 and 876000h0m0s (100 years), got 876000h0m0.000000001s"},
		{"run at 99 years ahead", func(s *queue.JobSpec) { s.RunAt = time.Now().Add(99 * 365 * 24 * time.Hour) }, ""},
		{"run at in year 1000", func(s *queue.JobSpec) { s.RunAt = time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC) }, ""},
		{"blank queue", func(s *queue.JobSpec) { s.Queue = "   " }, `queue: JobSpec.Queue must not be blank (only spaces), got "   "`},
		{"blank kind", func(s *queue.JobSpec) { s.Kind = " " }, `queue: JobSpec.Kind must not be blank (only spaces), got " "`},
		{"blank tenant", func(s *queue.JobSpec) { s.Tenant = "  " }, `queue: JobSpec.Tenant must not be blank (only spaces), got "  "`},
		{"blank group", func(s *queue.JobSpec) { s.Group = "\u00a0" }, `queue: JobSpec.Group must not be blank (only spaces), got "\u00a0"`},
		{"spaces inside", func(s *queue.JobSpec) { s.Tenant = "acme corp" }, ""},
	}
	for _, c := range cases {
		s := queue.JobSpec{Queue: "q", Kind: "k"}
		c.edit(&s)
		err := queue.ValidateSpec(s, 0)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
		if err != nil && !errors.Is(err, queue.ErrInvalidArgument) {
			t.Errorf("%s: %v does not match ErrInvalidArgument", c.name, err)
		}
	}
	s := queue.JobSpec{Queue: "q", Kind: "k", RunAt: far}
	if err := queue.ValidateSpec(s, 0); err == nil || !strings.Contains(err.Error(), "JobSpec.RunAt must be at most 100 years ahead") {
		t.Errorf("RunAt %s: got %v, want a refusal naming JobSpec.RunAt", far, err)
	}
}

func TestGroupAndTenantDurationBounds(t *testing.T) {
	t.Parallel()
	huge := time.Duration(1<<63 - 1)
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"group ttl", queue.GroupSpec{ID: "g", TTL: huge}.Validate(0),
			"queue: GroupSpec.TTL must be between 0 and 876000h0m0s (100 years), got 2562047h47m16.854775807s"},
		{"group interval", queue.GroupSpec{ID: "g", MinInterval: -time.Second}.Validate(0),
			"queue: GroupSpec.MinInterval must be between 0 and 876000h0m0s (100 years), got -1s"},
		{"blank group id", queue.GroupSpec{ID: " "}.Validate(0), `queue: GroupSpec.ID must not be blank (only spaces), got " "`},
		{"tenant max wait", queue.TenantConfig{MaxWait: huge}.Validate(),
			"queue: TenantConfig.MaxWait must be between 0 and 876000h0m0s (100 years), got 2562047h47m16.854775807s"},
	}
	for _, c := range cases {
		if c.err == nil || c.err.Error() != c.want {
			t.Errorf("%s:\n got %v\nwant %s", c.name, c.err, c.want)
		}
	}
}

// specStores opens every job store the bounds concern: SQLite, Redis on
// miniredis, and real Redis when SLUICE_REDIS_URL is set.
func specStores(t *testing.T) map[string]backend.Backend {
	t.Helper()
	sq, err := sqlitequeue.Open(filepath.Join(t.TempDir(), "jobs.db"), sqlitequeue.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sq.Close() })
	out := map[string]backend.Backend{"sqlite": sq}
	openRedis := func(name string, opts *redis.Options, prefix string) {
		c := redis.NewClient(opts)
		b, err := redisqueue.New(c, redisqueue.Options{Prefix: keyspace.Prefix(prefix)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close(); c.Close() })
		out[name] = b
	}
	openRedis("miniredis", &redis.Options{Addr: miniredis.RunT(t).Addr()}, "")
	if opts, prefix, ok := redistest.Real(t); ok {
		openRedis("redis", opts, string(prefix))
	}
	return out
}

// A time past the bound is refused by the Client on every store, which
// stores nothing; everything accepted reads back the same on every store
// (before the bounds, SQLite ran a job for the year 2300 at once while
// Redis scheduled it, and scheduled one for the year 1000 in 2169 while
// Redis ran it at once).
func TestClientRunAtAgreesAcrossStores(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ahead := time.Now().Add(99 * 365 * 24 * time.Hour).Truncate(time.Millisecond).UTC()
	cases := []struct {
		name    string
		runAt   time.Time
		refused bool
		state   queue.State
	}{
		{"year 2300", time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC), true, ""},
		{"year 1000", time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC), false, queue.StatePending},
		{"99 years ahead", ahead, false, queue.StateScheduled},
	}
	for name, b := range specStores(t) {
		for i, tc := range cases {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				c := queue.NewClient(b)
				q := fmt.Sprintf("q%d", i)
				j, err := c.Enqueue(ctx, queue.JobSpec{Queue: q, Kind: "k", RunAt: tc.runAt})
				if tc.refused {
					var ia *queue.InvalidArgumentError
					if !errors.As(err, &ia) || ia.Field != "JobSpec.RunAt" || !errors.Is(err, queue.ErrInvalidArgument) {
						t.Fatalf("Enqueue = %v, want an *InvalidArgumentError naming JobSpec.RunAt", err)
					}
					if p, err := c.List(ctx, queue.ListFilter{Queue: q}); err != nil || len(p.Jobs) != 0 {
						t.Fatalf("after the refusal: %d jobs (%v), want none", len(p.Jobs), err)
					}
					return
				}
				if err != nil || j.State != tc.state {
					t.Fatalf("Enqueue = %+v, %v; want %s", j, err, tc.state)
				}
				got, err := c.Get(ctx, j.ID)
				if err != nil || got.State != tc.state || (tc.state == queue.StateScheduled && !got.RunAt.Equal(tc.runAt)) {
					t.Fatalf("Get = %s at %s (%v), want %s", got.State, got.RunAt, err, tc.state)
				}
			})
		}
	}
}
