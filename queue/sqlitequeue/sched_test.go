package sqlitequeue_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
)

// TestCountsMatchJobs drives a random mix of every transition over
// tenants and groups, then checks the counts the triggers keep against a
// fresh count of the jobs: they must be equal, for every tenant, group and
// state.
func TestCountsMatchJobs(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "q.db")
	clk := clock.NewFake(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	b, err := sqlitequeue.Open(path, sqlitequeue.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	c := queue.NewClient(b)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(c.SetTenantDefaults(ctx, queue.TenantConfig{Limit: 3}))
	for g := 0; g < 3; g++ {
		_, err := c.CreateGroup(ctx, queue.GroupSpec{ID: fmt.Sprint("g", g), MaxConcurrency: 2, CompletionKind: "done"})
		must(err)
	}
	var held []queue.Lease
	for step := 0; step < 3000; step++ {
		switch r := rng.IntN(100); {
		case r < 35:
			s := queue.JobSpec{Queue: "q", Kind: "k", Tenant: fmt.Sprint("t", rng.IntN(4)), Priority: rng.IntN(3)}
			if rng.IntN(2) == 0 {
				s.Group = fmt.Sprint("g", rng.IntN(3))
			}
			if rng.IntN(5) == 0 {
				s.RunAt = clk.Now().Add(time.Duration(rng.IntN(3)) * time.Second)
			}
			if _, err := c.Enqueue(ctx, s); err != nil && !errors.Is(err, queue.ErrGroupClosed) {
				t.Fatal(err)
			}
		case r < 60:
			ls, err := b.Lease(ctx, queue.LeaseRequest{Queues: []string{"q"}, WorkerID: "w", Max: 3, LeaseFor: time.Minute})
			must(err)
			held = append(held, ls...)
		case r < 85 && len(held) > 0:
			i := rng.IntN(len(held))
			l := held[i]
			held = append(held[:i], held[i+1:]...)
			endAttempt(t, b, l, rng.IntN(5))
		case r < 88 && len(held) > 0:
			_, err := b.Cancel(ctx, held[rng.IntN(len(held))].Job.ID)
			must(err)
		case r < 92:
			clk.Advance(time.Second)
		case r < 94:
			_, err := c.BackOff(ctx, queue.TenantScope(fmt.Sprint("t", rng.IntN(4))), time.Duration(rng.IntN(3))*time.Second)
			must(err)
		case r < 95:
			_, err := c.CancelGroup(ctx, fmt.Sprint("g", rng.IntN(3)))
			if !errors.Is(err, queue.ErrGroupNotFound) { // the cleaner deletes done groups
				must(err)
			}
		case r < 97:
			clk.Advance(2 * time.Minute) // every held lease expires
			_, err := b.RescueExpired(ctx, queue.RescueRequest{MaxStalls: 3})
			must(err)
			held = nil
		default:
			_, err := b.Cleanup(ctx, queue.CleanupRequest{Retention: queue.Retention{Completed: time.Second, Failed: time.Second, Cancelled: time.Second}})
			must(err)
		}
	}
	compareCounts(t, path)
	drainAll(t, b, clk, held)
	compareCounts(t, path)
}

// drainAll finishes the held leases, then leases and completes until
// nothing is left: no job may stay waiting with nothing to wait for.
func drainAll(t *testing.T, b *sqlitequeue.Backend, clk *clock.Fake, held []queue.Lease) {
	t.Helper()
	ctx := context.Background()
	clk.Advance(time.Hour) // past every pause and delay
	for _, l := range held {
		endAttempt(t, b, l, 0)
	}
	for round := 0; round < 200; round++ {
		ls, err := b.Lease(ctx, queue.LeaseRequest{Queues: []string{"q", "default"}, WorkerID: "w", Max: 50, LeaseFor: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range ls {
			endAttempt(t, b, l, 0)
		}
		if len(ls) > 0 {
			continue
		}
		st, err := b.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		left := int64(0)
		for _, q := range st {
			for _, s := range []queue.State{queue.StateScheduled, queue.StatePending, queue.StateWaiting, queue.StateRetrying, queue.StateActive} {
				left += q.Counts[s]
			}
		}
		if left == 0 {
			return
		}
		clk.Advance(time.Minute) // retries and snoozes come due
	}
	st, _ := b.Stats(ctx)
	t.Fatalf("jobs left that never ran: %+v", st)
}

// endAttempt ends a held lease one of five ways.
func endAttempt(t *testing.T, b *sqlitequeue.Backend, l queue.Lease, how int) {
	t.Helper()
	ctx := context.Background()
	var err error
	switch how {
	case 0:
		err = b.Complete(ctx, l.Job.ID, l.Token, nil)
	case 1:
		_, err = b.Fail(ctx, l.Job.ID, l.Token, queue.Failure{Error: "x", RetryIn: time.Second})
	case 2:
		_, err = b.Fail(ctx, l.Job.ID, l.Token, queue.Failure{Error: "x", Permanent: true})
	case 3:
		_, err = b.Snooze(ctx, l.Job.ID, l.Token, time.Duration(how-3)*time.Second)
	default:
		_, err = b.Requeue(ctx, l.Job.ID, l.Token)
	}
	if err != nil && !errors.Is(err, queue.ErrLeaseLost) {
		t.Fatal(err)
	}
}

// compareCounts checks scope_counts against the jobs table: unfinished
// states for tenants; for groups, unfinished states exactly and finished
// states at least (the cleaner deletes finished jobs, their counts stay).
func compareCounts(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	read := func(q string) map[string]int64 {
		rows, err := db.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string]int64{}
		for rows.Next() {
			var k, n string
			var v int64
			if err := rows.Scan(&k, &n, &v); err != nil {
				t.Fatal(err)
			}
			if v != 0 {
				out[k+"/"+n] = v
			}
		}
		return out
	}
	const unfinished = `('scheduled', 'pending', 'waiting', 'active', 'retrying')`
	kept := read(`SELECT kind || ':' || name, state, n FROM scope_counts WHERE state IN ` + unfinished)
	want := read(`SELECT 't:' || tenant, state, count(*) FROM jobs WHERE tenant != '' AND state IN ` + unfinished + ` GROUP BY tenant, state
		UNION ALL SELECT 'g:' || grp, state, count(*) FROM jobs WHERE grp != '' AND state IN ` + unfinished + ` GROUP BY grp, state`)
	if len(kept) != len(want) {
		t.Errorf("%d counts kept, %d from the jobs:\nkept %v\njobs %v", len(kept), len(want), kept, want)
	}
	for k, v := range want {
		if kept[k] != v {
			t.Errorf("count %s = %d, jobs say %d", k, kept[k], v)
		}
	}
	var active int64
	if err := db.QueryRow(`SELECT count(*) FROM jobs WHERE state = 'active'`).Scan(&active); err != nil {
		t.Fatal(err)
	}
	over := read(`SELECT 't:' || tenant, 'active', count(*) FROM jobs WHERE tenant != '' AND state = 'active' GROUP BY tenant HAVING count(*) > 3`)
	if len(over) > 0 {
		t.Errorf("tenants over their limit of 3: %v", over)
	}
	t.Logf("%d jobs active at the end; counts agree for %d (scope, state) pairs", active, len(want))
}
