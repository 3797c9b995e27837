package sqlstore

import (
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	rules "github.com/sluicehq/sluice/internal/sched"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// Scope kinds: a tenant or a group, as a dialect's counts and locks name
// them.
const (
	ScopeTenant = "t"
	ScopeGroup  = "g"
)

// Holds: why a waiting job waits (the jobs.hold column).
const (
	HoldTenant = "tenant"
	HoldGroup  = "group"
)

// SchedBatch bounds the timed work of one Lease, per kind: the due jobs
// placed per queue, the tenants and groups woken, the waiting jobs failed
// and the groups expired. The rest follows on the next Lease.
const SchedBatch = 100

// SchedStmts are a dialect's statements for the scheduler, by name. Each
// takes the positional arguments its comment lists ($n; a dialect may
// write them as ?n) and returns the columns listed, in order.
type SchedStmts struct {
	// Group: $1 id → the group's GroupCols.
	Group string
	// GroupCounts: $1 group → state, count of its jobs.
	GroupCounts string
	// TenantRows: $1 tenant → tenant, lim, weight, backlog, max_wait,
	// paused_until of the rows of '' (the defaults) and $1.
	TenantRows string
	// WakeTenant, WakeGroup: $1 at, $2 name; the scope's wake becomes at
	// unless it has an earlier one (0 is none).
	WakeTenant, WakeGroup string
	// HoldJob: $1 hold, $2 wait_until, $3 now, $4 id; a pending job waits.
	HoldJob string
	// TenantWaiting: $1 tenant, $2 limit → id, queue, grp of its waiting
	// jobs, best first (band, vrank, id); GroupWaiting the same for a
	// group, with tenant in place of grp.
	TenantWaiting, GroupWaiting string
	// Release: $1 now, $2 id; a waiting job goes pending.
	Release string
	// TenantsToWake, GroupsToWake: $1 now, $2 limit → the names whose
	// wake has come, by wake then name.
	TenantsToWake, GroupsToWake string
	// TenantWoken, GroupWoken: $1 name, $2 now; clears a wake that has
	// come.
	TenantWoken, GroupWoken string
	// WaitedTooLong: $1 now, $2 limit → the jobs (SchedDialect.ScanJob)
	// waiting past their MaxWait deadline, by deadline then id.
	WaitedTooLong string
	// FailWaiting: $1 message, $2 error history, $3 now, $4 id; a job
	// still waiting past its deadline fails.
	FailWaiting string
	// GroupsExpired: $1 now, $2 limit → ids of the groups past their TTL,
	// by deadline then id.
	GroupsExpired string
	// GroupStarted: $1 now, $2 id; a group's last start.
	GroupStarted string
	// Ready: $1 queue, $2 limit → id, tenant, grp, band, vrank, vstart of
	// the queue's pending jobs, best first (band, vrank, id).
	Ready string
	// Due: $1 queue, $2 now, $3 limit → id, state, tenant, grp, priority,
	// whether it has a fair tag, of the queue's due scheduled and
	// retrying jobs, by run_at then id.
	Due string
	// Place: $1 state, $2 hold, $3 wait_until, $4 now, $5 vstart, $6
	// vfinish, $7 band, $8 vrank (all NULL: keep them), $9 id, $10 the
	// state it was read in, $11 whether it had a tag; a job goes pending
	// or waiting if it is still as read and, unless pending, due.
	Place string
	// MaintainDue: $1 queue → the earliest time (0: none) of the queue's
	// due jobs, the tenants' wakes, the groups' wakes, the waiting jobs'
	// deadlines and the groups' deadlines.
	MaintainDue string
	// QueueDue: $1 queue → the earliest run_at of its scheduled and
	// retrying jobs (0: none).
	QueueDue string

	// The settings and pauses of tenants, groups and queues.
	// TenantCounts: $1 tenant → state, count of its jobs not finished.
	TenantCounts string
	// SetTenant: $1 tenant ('' the defaults), $2 lim, $3 weight, $4
	// backlog, $5 max_wait; stores its settings.
	SetTenant string
	// TenantsWaiting → the tenants with waiting jobs.
	TenantsWaiting string
	// SetAging: $1 queue, $2 step.
	SetAging string
	// PauseTenant: $1 tenant, $2 end (0: resume) → paused_until; a pause
	// is only ever made longer.
	PauseTenant string
	// PauseGroup: $1 end, $2 group → paused_until; no row when the group
	// does not exist.
	PauseGroup string
	// PauseQueue: $1 queue, $2 end → paused_until.
	PauseQueue string
	// HoldTenantPending: $1 wait_until, $2 now, $3 tenant → grp of each of
	// its pending jobs, which it moves to waiting for the tenant.
	HoldTenantPending string
	// GroupPending: $1 group, $2 limit → id, queue, tenant of its pending
	// jobs, best first.
	GroupPending string

	// Groups' completion and cancel.
	// GroupUnfinished: $1 group → its unfinished jobs and all its jobs
	// (each may be counted only as 0 or more: completion tests them
	// against zero).
	GroupUnfinished string
	// GroupDone: $1 now, $2 group; marks it done unless it is.
	GroupDone string
	// GroupCompletion: $1 job id, $2 group; its completion job.
	GroupCompletion string
	// GroupCancel: $1 group; its cancel is asked for.
	GroupCancel string
	// CancelGroupIdle: $1 now, $2 group → id, tenant of its jobs not
	// started, which it cancels.
	CancelGroupIdle string
	// CancelGroupActive: $1 now, $2 group; asks its active jobs to stop.
	CancelGroupActive string
	// CreateGroup: $1 id, $2 tenant, $3 max_conc, $4 min_interval, $5
	// ttl, $6 deadline, $7 completion_kind, $8 completion_queue, $9
	// completion_payload, $10 webhook, $11 created_at; nothing when the
	// group exists.
	CreateGroup string
	// JoinGroup: $1 id, $2 created_at; a group without limits, unless it
	// exists.
	JoinGroup string
}

// SchedDialect is what differs in kind between the stores under the
// scheduler of one step: locking, how counts are kept, a dialect's
// set-based work, and the steps that belong to the store (events, group
// completion). Its methods run in the step's transaction.
type SchedDialect interface {
	// LockScope takes the step's lock on a scope (ScopeTenant or
	// ScopeGroup) before a decision about it; a store with one writer has
	// nothing to take.
	LockScope(kind, name string) error
	// LockScopes takes the locks of a job's tenant and group (none for an
	// empty name), in the dialect's lock order.
	LockScopes(tenant, grp string) error
	// TryScopes takes the locks of a candidate's tenant and group when it
	// can without waiting, and reports whether it holds both.
	TryScopes(tenant, grp string) (bool, error)
	// ScopeCount returns how many of a scope's jobs are in the states
	// named.
	ScopeCount(kind, name string, states ...queue.State) (int64, error)
	// QueuePausedUntil returns the end of a queue's pause (0: none).
	QueuePausedUntil(q string) (int64, error)
	// FairBase returns where the next fair tag of a tenant in queue q
	// starts (the queue's virtual time or the tenant's finish tag,
	// whichever is later) and the queue's aging step.
	FairBase(q, tenant string) (base int64, aging int, err error)
	// PromotePlain makes queue q's due jobs without tenant or group that
	// have a fair tag pending, by one statement, before the rest are
	// placed one by one.
	PromotePlain(q string) error
	// ScanJob reads a job from a row of WaitedTooLong.
	ScanJob(row Row) (*queue.Job, error)
	// JobFailed is told of a job FailWaiting failed.
	JobFailed(id int64) error
	// InsertCompletion stores a group's completion job (placed as any new
	// job is) and returns its id.
	InsertCompletion(spec queue.JobSpec) (int64, error)
	// EmitEvent records an event that is no job's row change.
	EmitEvent(e queue.Event) error
	// LockGroupJobs takes, before a group's cancel, the locks of the
	// group and of its unfinished jobs' tenants, in the dialect's lock
	// order.
	LockGroupJobs(id string) error
	// JobCancelled is told of a job a group's cancel cancelled.
	JobCancelled(id int64) error
	// Settled is told that a multi-job step has settled its jobs, which
	// moved to a final state.
	Settled() error
}

// Sched does the tenant and group scheduling of one step (see
// backend.TenantBackend and backend.GroupBackend for the rules, internal/sched
// for the decisions), in the step's transaction, over its dialect's
// statements. It caches what the step does not change, and collects the
// queues that got pending jobs and the fair tags it handed out.
type Sched struct {
	Tx  Tx           // the step's transaction
	St  *SchedStmts  // the dialect's statements
	D   SchedDialect // the dialect's steps for this transaction
	Now int64        // the step's time, in Unix nanoseconds

	tenants map[string]*TenantRow
	finish  map[schedFairKey]schedFairNext
	ready   []string
	backlog map[string]int64 // tenants' pending and waiting jobs, once counted
}

// TenantRow is a tenant's own and effective settings and its pause.
type TenantRow struct {
	Own, Eff    queue.TenantConfig
	PausedUntil int64
}

type schedFairKey struct{ queue, tenant string }

// schedFairNext is where a (queue, tenant)'s next tag starts, and the
// queue's aging step.
type schedFairNext struct {
	base  int64
	aging int
}

// ReadyQueue records that queue q got a pending job.
func (s *Sched) ReadyQueue(q string) {
	if !slices.Contains(s.ready, q) {
		s.ready = append(s.ready, q)
	}
}

// Ready returns the queues that got pending jobs, in the order they did.
func (s *Sched) Ready() []string { return s.ready }

// Forget drops cached settings after the step changed them.
func (s *Sched) Forget() { clear(s.tenants) }

// Tenant returns a tenant's settings (for "" none: no limits, weight 1).
func (s *Sched) Tenant(name string) (*TenantRow, error) {
	if t, ok := s.tenants[name]; ok {
		return t, nil
	}
	if s.tenants == nil {
		s.tenants = map[string]*TenantRow{}
	}
	t := &TenantRow{Eff: queue.TenantConfig{Limit: queue.Unlimited, Weight: 1, Backlog: queue.Unlimited}}
	if name != "" {
		def, err := readTenantRows(s.Tx, s.St.TenantRows, name, t)
		if err != nil {
			return nil, err
		}
		t.Eff = t.Own.Effective(def)
	}
	s.tenants[name] = t
	return t, nil
}

// readTenantRows reads the rows of the defaults and of tenant name
// (query: SchedStmts.TenantRows) into t's own settings and pause, and
// returns the defaults.
func readTenantRows(tx Tx, query, name string, t *TenantRow) (def queue.TenantConfig, err error) {
	rows, err := tx.Query(query, name)
	if err != nil {
		return def, err
	}
	defer rows.Close()
	for rows.Next() {
		var c queue.TenantConfig
		var who string
		var maxWait, paused int64
		if err := rows.Scan(&who, &c.Limit, &c.Weight, &c.Backlog, &maxWait, &paused); err != nil {
			return def, err
		}
		c.MaxWait = time.Duration(maxWait)
		if who == "" {
			def = c
		}
		if who == name {
			t.Own, t.PausedUntil = c, paused
		}
	}
	return def, rows.Err()
}

// Tag returns the fair tag and sort key of a job of tenant becoming ready
// for the first time in queue q: its start and finish tags, band and rank
// (backend.FairTag, backend.FairOrder). A step tagging several jobs of a
// tenant gives them consecutive tags.
func (s *Sched) Tag(q, tenant string, priority int) (start, finish, band, rank int64, err error) {
	t, err := s.Tenant(tenant)
	if err != nil {
		return 0, 0, 0, 0, err
	}
	k := schedFairKey{q, tenant}
	f, ok := s.finish[k]
	if !ok {
		if f.base, f.aging, err = s.D.FairBase(q, tenant); err != nil {
			return 0, 0, 0, 0, err
		}
	}
	start, finish = backend.FairTag(f.base, f.base, t.Eff.Weight)
	band, rank = backend.FairOrder(start, priority, f.aging)
	if s.finish == nil {
		s.finish = map[schedFairKey]schedFairNext{}
	}
	s.finish[k] = schedFairNext{base: finish, aging: f.aging}
	return start, finish, band, rank, nil
}

// Finishes calls fn with each (queue, tenant)'s finish tag after the tags
// this step handed out, for a dialect that keeps them in a table.
func (s *Sched) Finishes(fn func(q, tenant string, finish int64) error) error {
	for k, f := range s.finish {
		if err := fn(k.queue, k.tenant, f.base); err != nil {
			return err
		}
	}
	return nil
}

// CheckBacklog refuses one more ready job of tenant when its pending and
// waiting jobs are at its backlog cap. The count is read once per step:
// under the tenant's lock only this step adds to it, one per job it
// checks.
func (s *Sched) CheckBacklog(tenant string) error {
	if tenant == "" {
		return nil
	}
	t, err := s.Tenant(tenant)
	if err != nil || t.Eff.Backlog == queue.Unlimited {
		return err
	}
	n, ok := s.backlog[tenant]
	if !ok {
		if n, err = s.D.ScopeCount(ScopeTenant, tenant, queue.StatePending, queue.StateWaiting); err != nil {
			return err
		}
	}
	if n >= int64(t.Eff.Backlog) {
		return &queue.BacklogFullError{Tenant: tenant, Backlog: n, Cap: int64(t.Eff.Backlog)}
	}
	if s.backlog == nil {
		s.backlog = map[string]int64{}
	}
	s.backlog[tenant] = n + 1
	return nil
}

// HoldFor returns where a ready job of tenant and group goes: "" for
// pending, or the scope it waits for. self says the job already counts as
// pending (it is being placed again).
func (s *Sched) HoldFor(tenant, grp string, self bool) (string, error) {
	if tenant != "" {
		ok, err := s.TenantRoom(tenant, self)
		if err != nil || !ok {
			return HoldTenant, err
		}
	}
	if grp != "" {
		ok, err := s.GroupRoom(grp, self)
		if err != nil || !ok {
			return HoldGroup, err
		}
	}
	return "", nil
}

// Placement is where a new job goes: the scheduling columns it is
// stored with.
type Placement struct {
	Hold            string        // "" for pending, or the scope it waits for
	VStart, VFinish sql.NullInt64 // its fair tag; NULL when it is not ready
	Band, Rank      int64         // its place in the ready order
	WaitUntil       int64         // its MaxWait deadline when it waits (0: none)
}

// PlaceNew places a job of tenant and group in queue q as it is stored:
// a job ready at once (ready) gets its fair tag and goes pending, or
// waits when its tenant or group has no room; with checkBacklog, a
// tenant's full backlog refuses it. A job not ready keeps its priority as
// its band until it is placed. The caller holds the scopes' locks.
func (s *Sched) PlaceNew(q, tenant, grp string, priority int, ready, checkBacklog bool) (Placement, error) {
	var pl Placement
	if !ready {
		pl.Band = int64(priority)
		return pl, nil
	}
	if checkBacklog {
		if err := s.CheckBacklog(tenant); err != nil {
			return pl, err
		}
	}
	start, finish, band, rank, err := s.Tag(q, tenant, priority)
	if err != nil {
		return pl, err
	}
	pl.VStart, pl.VFinish = sql.NullInt64{Int64: start, Valid: true}, sql.NullInt64{Int64: finish, Valid: true}
	pl.Band, pl.Rank = band, rank
	if pl.Hold, err = s.HoldFor(tenant, grp, false); err != nil || pl.Hold == "" {
		return pl, err
	}
	pl.WaitUntil, err = s.WaitUntil(tenant)
	return pl, err
}

// TenantRoom reports, under the tenant's lock, whether the tenant may
// admit one more pending job.
func (s *Sched) TenantRoom(name string, self bool) (bool, error) {
	if err := s.D.LockScope(ScopeTenant, name); err != nil {
		return false, err
	}
	t, err := s.Tenant(name)
	if err != nil {
		return false, err
	}
	adm := int64(0)
	if t.Eff.Limit != queue.Unlimited && t.PausedUntil <= s.Now { // else the counts do not matter
		if adm, err = s.D.ScopeCount(ScopeTenant, name, queue.StatePending, queue.StateActive); err != nil {
			return false, err
		}
		if self {
			adm--
		}
	}
	ok, wake := rules.TenantRoom(t.Eff.Limit, schedTime(t.PausedUntil), schedTime(s.Now), adm)
	if !wake.IsZero() {
		return false, s.WakeTenant(name, schedNanos(wake))
	}
	return ok, nil
}

// GroupRoom reports, under the group's lock, whether the group may admit
// one more pending job.
func (s *Sched) GroupRoom(id string, self bool) (bool, error) {
	if err := s.D.LockScope(ScopeGroup, id); err != nil {
		return false, err
	}
	g, err := s.Group(id)
	if errors.Is(err, queue.ErrGroupNotFound) {
		return true, nil // deleted after it was done: no limits left
	}
	if err != nil {
		return false, err
	}
	var pending, active int64
	if g.Spec.MaxConcurrency > 0 || g.Spec.MinInterval > 0 { // else the counts do not matter
		if pending, err = s.D.ScopeCount(ScopeGroup, id, queue.StatePending); err != nil {
			return false, err
		}
		if active, err = s.D.ScopeCount(ScopeGroup, id, queue.StateActive); err != nil {
			return false, err
		}
	}
	if self {
		pending--
	}
	ok, wake := rules.GroupRoom(g.Limits(), schedTime(s.Now), pending, active)
	if !wake.IsZero() {
		return false, s.WakeGroup(id, schedNanos(wake))
	}
	return ok, nil
}

// WakeTenant makes the first Lease at or after at look at the tenant's
// waiting jobs again.
func (s *Sched) WakeTenant(name string, at int64) error {
	_, err := s.Tx.Exec(s.St.WakeTenant, at, name)
	return err
}

// WakeGroup is WakeTenant for a group.
func (s *Sched) WakeGroup(id string, at int64) error {
	_, err := s.Tx.Exec(s.St.WakeGroup, at, id)
	return err
}

// WaitUntil is the MaxWait deadline of a job of tenant that starts
// waiting now; 0 for none.
func (s *Sched) WaitUntil(tenant string) (int64, error) {
	if tenant == "" {
		return 0, nil
	}
	t, err := s.Tenant(tenant)
	if err != nil {
		return 0, err
	}
	return schedNanos(rules.WaitDeadline(schedTime(s.Now), t.Eff.MaxWait)), nil
}

// Hold moves pending job id of tenant to waiting for scope hold; false
// when it is not pending.
func (s *Sched) Hold(id int64, tenant, hold string) (bool, error) {
	until, err := s.WaitUntil(tenant)
	if err != nil {
		return false, err
	}
	n, err := s.Tx.Exec(s.St.HoldJob, hold, until, s.Now, id)
	return n > 0, err
}

// Settle does what a transition of job id of tenant and group to state
// leaves behind: a job pending again (requeued, rescued, snoozed for no
// time) is placed again and may have to wait; its tenant's and group's
// room is filled; a group left with jobs and none unfinished is
// completed. The caller holds the scopes' locks.
func (s *Sched) Settle(id int64, q, tenant, grp string, state queue.State) error {
	if tenant == "" && grp == "" {
		return nil
	}
	if state == queue.StatePending {
		hold, err := s.HoldFor(tenant, grp, true)
		if err != nil {
			return err
		}
		if hold != "" {
			if _, err := s.Hold(id, tenant, hold); err != nil {
				return err
			}
		} else {
			s.ReadyQueue(q)
		}
	}
	if err := s.FillTenant(tenant); err != nil {
		return err
	}
	if grp == "" {
		return nil
	}
	if err := s.FillGroup(grp); err != nil {
		return err
	}
	if state.Final() {
		return s.GroupSettle(grp)
	}
	return nil
}

// SettleJobs settles, once, the jobs a multi-job step moved to a final
// state, as every store does (internal/sched): it fills their tenants,
// then their groups, then completes the groups that may be done, each in
// the order of the jobs.
func (s *Sched) SettleJobs(list []*queue.Job) error {
	var ts, gs []string
	for _, j := range list {
		ts = schedAddOnce(ts, j.Tenant)
		gs = schedAddOnce(gs, j.Group)
	}
	for _, t := range ts {
		if err := s.FillTenant(t); err != nil {
			return err
		}
	}
	if err := s.SettleGroups(gs); err != nil {
		return err
	}
	if len(list) == 0 {
		return nil
	}
	return s.D.Settled()
}

// SettleGroups fills, then completes when done, the groups named.
func (s *Sched) SettleGroups(gs []string) error {
	for _, g := range gs {
		if err := s.FillGroup(g); err != nil {
			return err
		}
	}
	for _, g := range gs {
		if err := s.GroupSettle(g); err != nil {
			return err
		}
	}
	return nil
}

// schedAddOnce appends name to list unless it is empty or there already.
func schedAddOnce(list []string, name string) []string {
	if name == "" || slices.Contains(list, name) {
		return list
	}
	return append(list, name)
}

// schedTime reads a stored time in nanoseconds (0: none).
func schedTime(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// schedNanos is schedTime's inverse: 0 for the zero time.
func schedNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// schedErrorf wraps a sentinel with detail, keeping errors.Is working.
func schedErrorf(sentinel error, format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{sentinel}, args...)...)
}
