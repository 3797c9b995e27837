package sqlstore

import (
	"cmp"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"time"

	rules "github.com/sluicehq/sluice/internal/sched"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// GroupRow is a row of job_groups, as a dialect reads it.
type GroupRow struct {
	Spec            queue.GroupSpec
	Deadline        int64
	CreatedAt       int64
	CancelRequested bool
	DoneAt          int64
	CompletionJob   int64
	LastStart       int64
	PausedUntil     int64
	Gone            [3]int64 // completed, failed, cancelled jobs deleted (where kept)
}

// GroupCols are the columns ScanGroup reads, in order: a dialect's
// SchedStmts.Group selects them (one without a count of deleted jobs
// selects 0 for the last three).
const GroupCols = `id, tenant, max_conc, min_interval, ttl, deadline, completion_kind, completion_queue,
	completion_payload, webhook, created_at, cancel_requested, done_at, completion_job,
	last_start, paused_until, gone_completed, gone_failed, gone_cancelled`

// ScanGroup reads a row of GroupCols; queue.ErrGroupNotFound when there
// is none.
func ScanGroup(row Row) (*GroupRow, error) {
	g := &GroupRow{}
	var minInterval, ttl int64
	var webhook string
	var payload []byte
	err := row.Scan(&g.Spec.ID, &g.Spec.Tenant, &g.Spec.MaxConcurrency, &minInterval, &ttl, &g.Deadline,
		&g.Spec.CompletionKind, &g.Spec.CompletionQueue, &payload, &webhook, &g.CreatedAt, &g.CancelRequested,
		&g.DoneAt, &g.CompletionJob, &g.LastStart, &g.PausedUntil, &g.Gone[0], &g.Gone[1], &g.Gone[2])
	if errors.Is(err, sql.ErrNoRows) {
		return nil, queue.ErrGroupNotFound
	}
	if err != nil {
		return nil, err
	}
	if len(payload) > 0 {
		g.Spec.CompletionPayload = payload
	}
	g.Spec.MinInterval, g.Spec.TTL = time.Duration(minInterval), time.Duration(ttl)
	if g.Spec.Webhook, err = backend.DecodeWebhook(webhook); err != nil {
		return nil, err
	}
	return g, nil
}

// Group reads a group's row in the step; queue.ErrGroupNotFound when
// none.
func (s *Sched) Group(id string) (*GroupRow, error) { return ScanGroup(s.Tx.QueryRow(s.St.Group, id)) }

// Limits is what the scheduler's decisions read of the group.
func (g *GroupRow) Limits() rules.GroupLimits {
	return rules.GroupLimits{MaxConcurrency: g.Spec.MaxConcurrency, MinInterval: g.Spec.MinInterval,
		PausedUntil: schedTime(g.PausedUntil), LastStart: schedTime(g.LastStart)}
}

// BlockedUntil is when the group may start a job again: the end of a
// pause, or its last start plus its interval (0: now).
func (g *GroupRow) BlockedUntil() int64 { return schedNanos(g.Limits().BlockedUntil()) }

// Closed reports whether the group takes no more jobs: its cancel was
// asked for, or it is done.
func (g *GroupRow) Closed() bool { return g.CancelRequested || g.DoneAt > 0 }

// GroupSettle completes group id, under its lock, when it has jobs and
// none unfinished: marks it done (only if not yet, so exactly once),
// enqueues its completion job and records the group.completed event, all
// in the step.
func (s *Sched) GroupSettle(id string) error {
	if err := s.D.LockScope(ScopeGroup, id); err != nil {
		return err
	}
	var unfinished, total int64
	if err := s.Tx.QueryRow(s.St.GroupUnfinished, id).Scan(&unfinished, &total); err != nil {
		return err
	}
	if !rules.GroupComplete(unfinished, total) {
		return nil
	}
	n, err := s.Tx.Exec(s.St.GroupDone, s.Now, id)
	if err != nil || n == 0 {
		return err // done already (or the group is gone)
	}
	p, err := s.GroupProgress(id)
	if err != nil {
		return err
	}
	if spec, ok := backend.CompletionJob(*p); ok {
		jid, err := s.D.InsertCompletion(spec)
		if err != nil {
			return err
		}
		if _, err := s.Tx.Exec(s.St.GroupCompletion, jid, id); err != nil {
			return err
		}
		p.CompletionJobID = strconv.FormatInt(jid, 10)
	}
	data, err := json.Marshal(queue.CompletionReport{Group: p.ID, Total: p.Total(), Completed: p.Completed,
		Failed: p.Failed, Cancelled: p.Cancelled, CancelRequested: p.CancelRequested})
	if err != nil {
		return err
	}
	return s.D.EmitEvent(queue.Event{Type: queue.EventGroupCompleted, Group: p.ID, Tenant: p.Tenant,
		JobID: p.CompletionJobID, Data: data})
}

// CancelGroup cancels group id's idle jobs and flags its active ones,
// under the locks of the group and its jobs' tenants; the tenants get the
// room back in the order of the jobs, and the group may be done.
func (s *Sched) CancelGroup(id string) error {
	if err := s.D.LockGroupJobs(id); err != nil {
		return err
	}
	g, err := s.Group(id)
	if err != nil {
		return err
	}
	if g.Closed() {
		return nil
	}
	if _, err := s.Tx.Exec(s.St.GroupCancel, id); err != nil {
		return err
	}
	rows, err := s.Tx.Query(s.St.CancelGroupIdle, s.Now, id)
	if err != nil {
		return err
	}
	type cancelled struct {
		id     int64
		tenant string
	}
	var list []cancelled
	for rows.Next() {
		var c cancelled
		if err := rows.Scan(&c.id, &c.tenant); err != nil {
			rows.Close()
			return err
		}
		list = append(list, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	slices.SortFunc(list, func(a, b cancelled) int { return cmp.Compare(a.id, b.id) })
	var tenants []string
	for _, c := range list {
		if err := s.D.JobCancelled(c.id); err != nil {
			return err
		}
		tenants = schedAddOnce(tenants, c.tenant)
	}
	if _, err := s.Tx.Exec(s.St.CancelGroupActive, s.Now, id); err != nil {
		return err
	}
	for _, t := range tenants {
		if err := s.FillTenant(t); err != nil {
			return err
		}
	}
	if err := s.GroupSettle(id); err != nil {
		return err
	}
	return s.D.Settled() // its jobs' children may be in other groups
}

// CreateGroup stores a new group, under its lock, and returns its
// progress; queue.ErrGroupExists when it exists.
func (s *Sched) CreateGroup(spec queue.GroupSpec) (*queue.GroupProgress, error) {
	if err := s.D.LockScope(ScopeGroup, spec.ID); err != nil {
		return nil, err
	}
	deadline := int64(0)
	if spec.TTL > 0 {
		deadline = s.Now + int64(min(spec.TTL, queue.MaxDuration))
	}
	n, err := s.Tx.Exec(s.St.CreateGroup, spec.ID, spec.Tenant, spec.MaxConcurrency, int64(spec.MinInterval),
		int64(spec.TTL), deadline, spec.CompletionKind, spec.CompletionQueue, spec.CompletionPayload,
		backend.EncodeWebhook(spec.Webhook), s.Now)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, schedErrorf(queue.ErrGroupExists, "group %s", spec.ID)
	}
	return s.GroupProgress(spec.ID)
}

// JoinGroup is called, under the group's lock, for each job stored into
// group id: it creates a group never created (with no limits), and
// refuses a closed one.
func (s *Sched) JoinGroup(id string) error {
	if id == "" {
		return nil
	}
	g, err := s.Group(id)
	if errors.Is(err, queue.ErrGroupNotFound) {
		_, err = s.Tx.Exec(s.St.JoinGroup, id, s.Now)
		return err
	}
	if err != nil {
		return err
	}
	if g.Closed() {
		return schedErrorf(queue.ErrGroupClosed, "group %s", id)
	}
	return nil
}

// GroupRetention is how long an ended group is kept: as long as the
// longest-kept of its jobs, so its progress outlives them; negative
// (forever) when any final state is kept forever.
func GroupRetention(r queue.Retention) time.Duration {
	keep := time.Duration(0)
	for _, st := range []queue.State{queue.StateCompleted, queue.StateFailed, queue.StateCancelled} {
		d, _ := r.For(st)
		if d < 0 {
			return -1
		}
		keep = max(keep, d)
	}
	return keep
}

// GroupProgress reads a group's progress in the step.
func (s *Sched) GroupProgress(id string) (*queue.GroupProgress, error) {
	g, err := s.Group(id)
	if err != nil {
		return nil, err
	}
	return GroupProgressOf(g, s.Tx, s.St.GroupCounts, s.Now)
}

// GroupProgressOf is the progress of group g at now, with its jobs'
// counts read by query ($1 group → state, count) through tx: a pause that
// has ended is not reported.
func GroupProgressOf(g *GroupRow, tx Tx, query string, now int64) (*queue.GroupProgress, error) {
	p := &queue.GroupProgress{
		GroupSpec: g.Spec, CancelRequested: g.CancelRequested, Done: g.DoneAt > 0,
		Completed: g.Gone[0], Failed: g.Gone[1], Cancelled: g.Gone[2],
		CreatedAt: schedTime(g.CreatedAt), FinishedAt: schedTime(g.DoneAt),
	}
	if g.PausedUntil > now {
		p.PausedUntil = schedTime(g.PausedUntil)
	}
	if g.CompletionJob > 0 {
		p.CompletionJobID = strconv.FormatInt(g.CompletionJob, 10)
	}
	if len(p.CompletionPayload) == 0 {
		p.CompletionPayload = nil
	}
	rows, err := tx.Query(query, g.Spec.ID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var st string
		var n int64
		if err := rows.Scan(&st, &n); err != nil {
			return nil, err
		}
		backend.AddGroupCount(p, queue.State(st), n)
	}
	return p, rows.Err()
}
