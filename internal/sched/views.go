package sched

import (
	"cmp"
	"slices"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// Job returns a copy of the job, or false when there is none (never
// enqueued, or deleted by Cleanup).
func (m *Model) Job(id ID) (Job, bool) {
	j, ok := m.jobs[id]
	if !ok {
		return Job{}, false
	}
	return *j, true
}

// Jobs returns a copy of every job, in sequence order.
func (m *Model) Jobs() []Job {
	list := m.sorted(func(*Job) bool { return true })
	out := make([]Job, len(list))
	for i, j := range list {
		out[i] = *j
	}
	return out
}

// Stats returns the jobs per state of every queue that has jobs, by queue
// name, with the end of a queue pause in force at now.
func (m *Model) Stats(now time.Time) []queue.QueueStats {
	by := map[string]map[queue.State]int64{}
	for _, j := range m.jobs {
		if by[j.Queue] == nil {
			by[j.Queue] = map[queue.State]int64{}
		}
		by[j.Queue][j.State]++
	}
	out := make([]queue.QueueStats, 0, len(by))
	for q, c := range by {
		st := queue.QueueStats{Queue: q, Counts: c}
		if qs, ok := m.queues[q]; ok && qs.pausedUntil.After(now) {
			st.PausedUntil = qs.pausedUntil
		}
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b queue.QueueStats) int { return cmp.Compare(a.Queue, b.Queue) })
	return out
}

// QueuePausedUntil returns the end of the queue's pause in force at now,
// zero when none.
func (m *Model) QueuePausedUntil(now time.Time, q string) time.Time {
	if qs, ok := m.queues[q]; ok && qs.pausedUntil.After(now) {
		return qs.pausedUntil
	}
	return time.Time{}
}

// TimerKind names what happens when a Timer comes due.
type TimerKind string

// The kinds of time-driven work.
const (
	TimerDue     TimerKind = "due"      // a scheduled or retrying job becomes ready
	TimerWake    TimerKind = "wake"     // a tenant or group is filled (a pause or crawl delay ended)
	TimerPause   TimerKind = "pause"    // a pause ends (a Lease takes it in at the scope's wake)
	TimerMaxWait TimerKind = "max wait" // a waiting job fails
	TimerTTL     TimerKind = "ttl"      // a group is cancelled
	TimerLease   TimerKind = "lease"    // a lease may be rescued after this
)

// Timer is a time at which some work comes due; a Lease at or after At
// does it (RescueExpired, for a lease: strictly after).
type Timer struct {
	At   time.Time
	Kind TimerKind
	// Name is the job id, tenant, group or queue concerned.
	Name string
}

// Timers returns every instant after now at which time-driven work comes
// due, earliest first.
func (m *Model) Timers(now time.Time) []Timer {
	var out []Timer
	add := func(at time.Time, k TimerKind, name string) {
		if at.After(now) {
			out = append(out, Timer{At: at, Kind: k, Name: name})
		}
	}
	for _, j := range m.sorted(func(*Job) bool { return true }) {
		id := jobName(j.ID)
		switch j.State {
		case queue.StateScheduled, queue.StateRetrying:
			add(j.RunAt, TimerDue, id)
		case queue.StateWaiting:
			if !j.WaitUntil.IsZero() {
				add(j.WaitUntil, TimerMaxWait, id)
			}
		case queue.StateActive:
			add(j.LeaseUntil, TimerLease, id)
		}
	}
	for n, t := range m.tenants {
		add(t.pausedUntil, TimerPause, "tenant "+n)
		add(t.wakeAt, TimerWake, "tenant "+n)
	}
	for n, q := range m.queues {
		add(q.pausedUntil, TimerPause, "queue "+n)
	}
	for id, g := range m.groups {
		add(g.pausedUntil, TimerPause, "group "+id)
		add(g.wakeAt, TimerWake, "group "+id)
		add(g.deadline, TimerTTL, id)
	}
	slices.SortFunc(out, func(a, b Timer) int {
		return cmp.Or(a.At.Compare(b.At), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name))
	})
	return out
}

func jobName(id ID) string { return "job " + strconv.FormatInt(int64(id), 10) }

// Cleanup deletes finished jobs whose retention has passed (as
// backend.Backend.Cleanup, queue by queue in name order, each state oldest
// first, at most req.Limit), and the groups done longer ago than the
// longest retention (kept forever when any retention is negative).
// Deleting a job releases its unique key; its group keeps counting it.
func (m *Model) Cleanup(now time.Time, req backend.CleanupRequest) int {
	res, _ := m.run("Cleanup", now, func(m *Model) (any, error) {
		return m.cleanup(req), nil
	})
	n, _ := res.(int)
	return n
}

func (m *Model) cleanup(req backend.CleanupRequest) int {
	limit := cmp.Or(max(req.Limit, 0), backend.DefaultBatchLimit)
	list := m.sorted(func(j *Job) bool {
		keep, final := req.Retention.For(j.State)
		return final && keep >= 0 && !j.FinishedAt.After(m.now().Add(-keep)) &&
			(len(req.Queues) == 0 || slices.Contains(req.Queues, j.Queue))
	})
	slices.SortStableFunc(list, func(a, b *Job) int {
		return cmp.Or(cmp.Compare(a.Queue, b.Queue), cmp.Compare(stateOrder(a.State), stateOrder(b.State)),
			a.FinishedAt.Compare(b.FinishedAt))
	})
	if len(list) > limit {
		m.note("Cleanup", "more finished jobs are due than the limit: which go first is open")
		list = list[:limit]
	}
	for _, j := range list {
		if g, ok := m.groups[j.Group]; ok {
			g.deleted[j.State]++
		}
		delete(m.jobs, j.ID)
	}
	m.cleanGroups(req.Retention, limit)
	return len(list)
}

func stateOrder(s queue.State) int {
	return slices.Index([]queue.State{queue.StateCompleted, queue.StateFailed, queue.StateCancelled}, s)
}

// cleanGroups deletes groups done at or before now minus the longest
// retention, oldest first, at most limit.
func (m *Model) cleanGroups(r queue.Retention, limit int) {
	keep := time.Duration(0)
	for _, d := range []time.Duration{r.Completed, r.Failed, r.Cancelled} {
		if d < 0 {
			return
		}
		keep = max(keep, d)
	}
	var ids []string
	for id, g := range m.groups {
		if g.done && !g.doneAt.After(m.now().Add(-keep)) {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(a, b string) int {
		return cmp.Or(m.groups[a].doneAt.Compare(m.groups[b].doneAt), cmp.Compare(a, b))
	})
	for _, id := range ids[:min(len(ids), limit)] {
		delete(m.groups, id)
	}
}
