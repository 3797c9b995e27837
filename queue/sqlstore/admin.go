package sqlstore

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strconv"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// QueuePauses reads the queues paused at now and until when: query takes
// now and returns queue and paused_until of each pause in force.
func QueuePauses(tx Tx, query string, now int64) (map[string]int64, error) {
	rows, err := tx.Query(query, now)
	type pause struct {
		q     string
		until int64
	}
	ps, err := CollectRows(rows, err, func(r Row) (pause, error) {
		var p pause
		return p, r.Scan(&p.q, &p.until)
	})
	out := make(map[string]int64, len(ps))
	for _, p := range ps {
		out[p.q] = p.until
	}
	return out, err
}

// QueueStats counts the jobs of each queue by state with counts (which
// returns queue, state and count rows) and lists each paused queue, with
// jobs or not: the pause is what an operator must see to lift it.
func QueueStats(tx Tx, counts string, paused map[string]int64) ([]queue.QueueStats, error) {
	byQueue := map[string]map[queue.State]int64{}
	rows, err := tx.Query(counts)
	_, err = CollectRows(rows, err, func(r Row) (struct{}, error) {
		var q, st string
		var n int64
		if err := r.Scan(&q, &st, &n); err != nil {
			return struct{}{}, err
		}
		if byQueue[q] == nil {
			byQueue[q] = map[queue.State]int64{}
		}
		byQueue[q][queue.State(st)] = n
		return struct{}{}, nil
	})
	if err != nil {
		return nil, err
	}
	for q := range paused {
		if byQueue[q] == nil {
			byQueue[q] = map[queue.State]int64{}
		}
	}
	out := make([]queue.QueueStats, 0, len(byQueue))
	for q, c := range byQueue {
		out = append(out, queue.QueueStats{Queue: q, Counts: c, PausedUntil: FromNanos(paused[q])})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Queue < out[j].Queue })
	return out, nil
}

// CancelFinished returns j with ErrJobFinished when a cancel found it completed
// or failed: it ended before the cancel could.
func CancelFinished(j *queue.Job) (*queue.Job, error) {
	if j.State == queue.StateCompleted || j.State == queue.StateFailed {
		return j, queue.ErrJobFinished
	}
	return j, nil
}

// RescueLimits are the batch limit and stall limit of req, defaults
// filled.
func RescueLimits(req backend.RescueRequest) (limit, maxStalls int) {
	limit, maxStalls = req.Limit, req.MaxStalls
	if maxStalls <= 0 {
		maxStalls = queue.DefaultMaxStalls
	}
	if limit <= 0 {
		limit = backend.DefaultBatchLimit
	}
	return limit, maxStalls
}

// Stalled is what becomes of a job whose lease expired.
type Stalled struct {
	// Next is its new state: cancelled when a cancel was asked for,
	// failed when it stalled maxStalls times, else pending.
	Next queue.State
	// Stalls is its stall count with this one.
	Stalls int
	// Error and Errors are, for a failed job, its last error and its
	// error history as JSON; empty otherwise.
	Error, Errors string
}

// RescueOutcome decides what becomes of the expired job j at now.
func RescueOutcome(j *queue.Job, now int64, maxStalls int) (Stalled, error) {
	r := Stalled{Next: queue.StatePending, Stalls: j.Stalls + 1}
	switch {
	case j.CancelRequested:
		r.Next = queue.StateCancelled
	case r.Stalls >= maxStalls:
		r.Next = queue.StateFailed
		r.Error = fmt.Sprintf("queue: job stalled %d times (its lease expired before the worker finished)", r.Stalls)
		var err error
		r.Errors, err = AppendError(j.Errors, queue.AttemptError{Attempt: j.Attempt, At: FromNanos(now), Error: r.Error})
		if err != nil {
			return r, err
		}
	}
	return r, nil
}

// RescueJobs decides what becomes of each of the expired jobs at now and
// has apply make it so (i is the job's index in expired). It counts the
// outcomes; requeued lists the queues of the jobs pending again.
func RescueJobs(expired []*queue.Job, now int64, maxStalls int, apply func(i int, j *queue.Job, r Stalled) error) (res backend.RescueResult, requeued map[string]bool, err error) {
	requeued = map[string]bool{}
	for i, j := range expired {
		r, err := RescueOutcome(j, now, maxStalls)
		if err == nil {
			err = apply(i, j, r)
		}
		if err != nil {
			return backend.RescueResult{}, nil, err
		}
		switch r.Next {
		case queue.StatePending:
			res.Requeued++
			requeued[j.Queue] = true
		case queue.StateFailed:
			res.Failed++
		case queue.StateCancelled:
			res.Cancelled++
		}
	}
	return res, requeued, nil
}

// SettleRescued moves, in a rescue's step, the expired jobs of tenants or
// groups in list out of active one at a time, by queue then lease expiry,
// as every store does (internal/sched): each one's scopes are locked, move
// updates it (its state, false when it no longer was expired), and one
// pending again is placed while the later ones still count as active.
// The jobs moved are then settled once (SettleJobs).
func (s *Sched) SettleRescued(list []*queue.Job, move func(j *queue.Job) (queue.State, bool, error)) error {
	order := slices.Clone(list)
	slices.SortStableFunc(order, func(a, b *queue.Job) int {
		return cmp.Or(cmp.Compare(a.Queue, b.Queue), a.LeaseUntil.Compare(b.LeaseUntil))
	})
	var done []*queue.Job
	for _, j := range order {
		if err := s.D.LockScopes(j.Tenant, j.Group); err != nil {
			return err
		}
		st, ok, err := move(j)
		if err != nil {
			return err
		}
		if !ok {
			continue // no longer expired
		}
		done = append(done, j)
		if st == queue.StatePending {
			id, err := ParseID(j.ID)
			if err != nil {
				return err
			}
			p := Placing{ID: id, Queue: j.Queue, Tenant: j.Tenant, Grp: j.Group, Priority: j.Priority,
				From: string(st), HasTag: true, Self: true}
			if _, err := s.Place(p); err != nil {
				return err
			}
		}
	}
	return s.SettleJobs(done)
}

// ScanJobs reads every row of rows as a job and closes it.
func ScanJobs(rows Rows, err error) ([]*queue.Job, error) {
	return CollectRows(rows, err, func(r Row) (*queue.Job, error) { return ScanJob(r) })
}

// Retryable returns a *queue.NotRetryableError unless a job in state and
// group may be retried: a failed or cancelled job of no group.
func Retryable(id string, state queue.State, grp string) error {
	if state != queue.StateFailed && state != queue.StateCancelled {
		return &queue.NotRetryableError{ID: id, State: state}
	}
	if grp != "" {
		return &queue.NotRetryableError{ID: id, State: state, Group: grp}
	}
	return nil
}

// ParentsDone refuses to retry flow job id, in state st, while a parent
// holds it back: parent is the row of the dialect's query for the parent
// that does (id, state), if any (backend.Retrier).
func ParentsDone(parent Row, id string, st queue.State) error {
	var pid int64
	var state string
	err := parent.Scan(&pid, &state)
	if IsNoRows(err) {
		return nil
	}
	if err != nil {
		return err
	}
	return &queue.NotRetryableError{ID: id, State: st, Parent: strconv.FormatInt(pid, 10), ParentState: queue.State(state)}
}

// RetryChecks refuses to retry job id of queue q, read under its lock in
// state, of group grp, with unique key key (nil for none): a job that did
// not fail and was not cancelled, or is of a group; one a parent holds
// back (parent runs the dialect's query for it, see ParentsDone); one
// whose key another job holds (holder finds that job, nil for none).
func RetryChecks(id, q string, state queue.State, grp string, key *string, parent func() Row, holder func(q, key string) (*queue.Job, error)) error {
	if err := Retryable(id, state, grp); err != nil {
		return err
	}
	if err := ParentsDone(parent(), id, state); err != nil {
		return err
	}
	if key == nil {
		return nil
	}
	h, err := holder(q, *key)
	if err != nil || h == nil || h.ID == id {
		return err
	}
	return &queue.DuplicateError{ID: id, Holder: h.ID, Queue: q, Key: *key}
}

// CleanupJobs deletes expired jobs of req's final states, at most limit
// (default DefaultBatchLimit) in all, and returns how many. Each of
// deletes is run per state kept for a while, as long as room is left,
// with the arguments state, cutoff (finished at or before), queueArgs,
// then the room left.
func CleanupJobs(tx Tx, deletes []string, queueArgs []any, req backend.CleanupRequest, now int64) (int, error) {
	limit := req.Limit
	if limit <= 0 {
		limit = backend.DefaultBatchLimit
	}
	deleted := 0
	for _, st := range []queue.State{queue.StateCompleted, queue.StateFailed, queue.StateCancelled} {
		keep, _ := req.Retention.For(st)
		for _, q := range deletes {
			if keep < 0 || deleted >= limit {
				break
			}
			args := append(append([]any{string(st), now - int64(keep)}, queueArgs...), limit-deleted)
			n, err := tx.Exec(q, args...)
			if err != nil {
				return deleted, err
			}
			deleted += int(n)
		}
	}
	return deleted, nil
}
