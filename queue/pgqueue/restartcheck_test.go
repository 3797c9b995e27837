package pgqueue_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/pgqueue"
)

// checkRestart checks the outcome of TestRestart, as s reads it, the
// server having been down at each of kills: every job completed exactly
// once and ran at least once. A job may run more than once, as the
// at-least-once contract allows, in two ways only: its lease expired and
// was rescued, so the lease the worker ran last is not the only one in
// the event log; or a crash undid the lease it ran on (a lease commits
// without waiting for its WAL flush), so the log has no start at that
// lease's time, which must come before a crash. No lease in the log runs
// twice, and one that never ran was rescued.
func checkRestart(t *testing.T, s *pgqueue.Store, r *runLog, kills []time.Time) {
	t.Helper()
	jobs := listAll(t, s)
	completions, leases := readLog(t, s)
	lastKill := kills[len(kills)-1].UnixNano()
	r.mu.Lock()
	defer r.mu.Unlock()
	again, undone, unrun := 0, 0, 0
	for id, j := range jobs {
		runs := r.runs[id]
		switch {
		case j.State != queue.StateCompleted:
			t.Errorf("job %s ends %s, want completed", id, j.State)
		case completions[id] != 1:
			t.Errorf("job %s completed %d times in the event log, want once", id, completions[id])
		case len(runs) == 0:
			t.Errorf("job %s completed but its handler never ran", id)
		}
		if len(runs) > 1 {
			again++
		}
		ran := map[int64]int{}
		for _, l := range runs {
			switch {
			case leases[id][l.leased]:
				if ran[l.leased]++; ran[l.leased] == 2 {
					t.Errorf("job %s: one lease ran twice (runs %+v)", id, runs)
				}
			case l.leased < lastKill:
				undone++
			default:
				t.Errorf("job %s ran on a lease the event log does not hold, taken after the last crash (runs %+v)", id, runs)
			}
		}
		if n := len(leases[id]) - len(ran); n > 0 {
			unrun += n
			if j.Stalls == 0 {
				t.Errorf("job %s: %d of its leases never ran, but it was never rescued (runs %+v)", id, n, runs)
			}
		}
	}
	for id := range r.runs {
		if jobs[id] == nil {
			t.Errorf("the handler ran job %s, which the store does not hold", id)
		}
	}
	t.Logf("%d jobs, each completed once; %d ran more than once: %d runs on leases a crash undid, %d leases never run (rescued)",
		len(jobs), again, undone, unrun)
}

// listAll returns every job of s by id.
func listAll(t *testing.T, s *pgqueue.Store) map[string]*queue.Job {
	t.Helper()
	jobs := map[string]*queue.Job{}
	f := queue.ListFilter{Limit: queue.MaxListLimit}
	for {
		page, err := s.List(context.Background(), f)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range page.Jobs {
			jobs[j.ID] = j
		}
		if page.Next == "" {
			return jobs
		}
		f.Cursor = page.Next
	}
}

// readLog reads the event log of s: per job, how many times it
// completed, and the times (Unix nanoseconds) of the leases it started on.
func readLog(t *testing.T, s *pgqueue.Store) (completed map[string]int, leases map[string]map[int64]bool) {
	t.Helper()
	completed, leases = map[string]int{}, map[string]map[int64]bool{}
	after := ""
	for {
		b, err := s.ReadEvents(context.Background(), after, 1000, 0)
		if err != nil {
			t.Fatal(err)
		}
		if b.Gap {
			t.Fatal("the event log has a gap: events were pruned")
		}
		if len(b.Events) == 0 {
			return completed, leases
		}
		for _, e := range b.Events {
			switch e.Type {
			case queue.EventJobCompleted:
				completed[e.JobID]++
			case queue.EventJobStarted:
				if leases[e.JobID] == nil {
					leases[e.JobID] = map[int64]bool{}
				}
				leases[e.JobID][e.Time.UnixNano()] = true
			}
		}
		after = b.Events[len(b.Events)-1].ID
	}
}
