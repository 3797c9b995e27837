package pgqueue

import (
	"errors"
	"time"

	rules "github.com/sluicehq/sluice/internal/sched"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// groupRow is a row of job_groups.
type groupRow struct {
	spec          queue.GroupSpec
	deadline      int64
	createdAt     int64
	cancelReq     bool
	doneAt        int64
	completionJob int64
	lastStart     int64
	pausedUntil   int64
	gone          [3]int64 // completed, failed, cancelled jobs deleted
}

// limits is what the scheduler's decisions read of the group.
func (g *groupRow) limits() rules.GroupLimits {
	return rules.GroupLimits{MaxConcurrency: g.spec.MaxConcurrency, MinInterval: g.spec.MinInterval,
		PausedUntil: fromNanos(g.pausedUntil), LastStart: fromNanos(g.lastStart)}
}

// blockedUntil is when the group may start a job again (0: now).
func (g *groupRow) blockedUntil() int64 {
	t := g.limits().BlockedUntil()
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

const groupCols = `id, tenant, max_conc, min_interval, ttl, deadline, completion_kind, completion_queue,
	coalesce(completion_payload, ''::bytea), webhook, created_at, cancel_requested, done_at, completion_job,
	last_start, paused_until, gone_completed, gone_failed, gone_cancelled`

const qGroup = `SELECT ` + groupCols + ` FROM __schema__.job_groups WHERE id = $1`

func scanGroup(row scanner) (*groupRow, error) {
	g := &groupRow{}
	var minInterval, ttl int64
	var webhook string
	var payload []byte
	err := row.Scan(&g.spec.ID, &g.spec.Tenant, &g.spec.MaxConcurrency, &minInterval, &ttl, &g.deadline,
		&g.spec.CompletionKind, &g.spec.CompletionQueue, &payload, &webhook, &g.createdAt, &g.cancelReq,
		&g.doneAt, &g.completionJob, &g.lastStart, &g.pausedUntil, &g.gone[0], &g.gone[1], &g.gone[2])
	if isNoRows(err) {
		return nil, queue.ErrGroupNotFound
	}
	if err != nil {
		return nil, err
	}
	if len(payload) > 0 {
		g.spec.CompletionPayload = payload
	}
	g.spec.MinInterval, g.spec.TTL = time.Duration(minInterval), time.Duration(ttl)
	if g.spec.Webhook, err = backend.DecodeWebhook(webhook); err != nil {
		return nil, err
	}
	return g, nil
}

// group reads a group's row; ErrGroupNotFound when none.
func (sc *sched) group(id string) (*groupRow, error) {
	return scanGroup(sc.row(qGroup, id))
}

// groupCount counts a group's jobs in the states named.
func (sc *sched) groupCount(id string, states ...string) (int64, error) {
	var n int64
	err := sc.row(`SELECT count(*) FROM __schema__.jobs WHERE grp = $1 AND grp <> '' AND state = ANY($2)`,
		id, states).Scan(&n)
	return n, err
}

// joinGroup is called, under the group's lock, for each job enqueued into
// group id: it creates a group never created (with no limits), and
// refuses a closed one.
func (sc *sched) joinGroup(id string) error {
	if id == "" {
		return nil
	}
	var cancel bool
	var done int64
	err := sc.row(`SELECT cancel_requested, done_at FROM __schema__.job_groups WHERE id = $1`, id).Scan(&cancel, &done)
	if isNoRows(err) {
		return sc.exec(`INSERT INTO __schema__.job_groups (id, created_at) VALUES ($1, $2) ON CONFLICT DO NOTHING`, id, sc.now)
	}
	if err != nil {
		return err
	}
	if cancel || done > 0 {
		return errorf(queue.ErrGroupClosed, "group %s", id)
	}
	return nil
}

// groupRoom reports whether the group may admit one more pending job.
// self says the job already counts as pending.
func (sc *sched) groupRoom(id string, self bool) (bool, error) {
	if err := sc.lock(kindGroup, id); err != nil {
		return false, err
	}
	g, err := sc.group(id)
	if errors.Is(err, queue.ErrGroupNotFound) {
		return true, nil // deleted after it was done: no limits left
	}
	if err != nil {
		return false, err
	}
	var pending, active int64
	if g.spec.MaxConcurrency > 0 || g.spec.MinInterval > 0 {
		if pending, err = sc.groupCount(id, "pending"); err != nil {
			return false, err
		}
		if active, err = sc.groupCount(id, "active"); err != nil {
			return false, err
		}
	}
	if self {
		pending--
	}
	ok, wake := rules.GroupRoom(g.limits(), fromNanos(sc.now), pending, active)
	if !wake.IsZero() {
		return false, sc.wakeGroup(id, toNanos(wake))
	}
	return ok, nil
}

// wakeGroup makes the first Lease at or after at look at the group's
// waiting jobs again.
func (sc *sched) wakeGroup(id string, at int64) error {
	return sc.exec(`UPDATE __schema__.job_groups SET wake_at = CASE WHEN wake_at = 0 OR wake_at > $1::bigint THEN $1::bigint ELSE wake_at END
		WHERE id = $2`, at, id)
}

const qGroupWaiting = `SELECT id, queue, tenant FROM __schema__.jobs WHERE grp = $1 AND grp <> '' AND state = 'waiting'
	ORDER BY band, vrank, id LIMIT $2 FOR UPDATE`

// fillGroup releases, under the group's lock, its best waiting jobs, as
// many as it has room for, skipping those whose tenant has none.
func (sc *sched) fillGroup(id string) error {
	if id == "" {
		return nil
	}
	if err := sc.lock(kindGroup, id); err != nil {
		return err
	}
	waiting, err := sc.groupCount(id, "waiting")
	if err != nil || waiting == 0 {
		return err
	}
	g, err := sc.group(id)
	if errors.Is(err, queue.ErrGroupNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if until := g.blockedUntil(); until > sc.now {
		return sc.wakeGroup(id, until)
	}
	pending, err := sc.groupCount(id, "pending")
	if err != nil {
		return err
	}
	active, err := sc.groupCount(id, "active")
	if err != nil {
		return err
	}
	room := rules.GroupFill(g.limits(), waiting, pending, active)
	return sc.release(qGroupWaiting, id, room, func(other string) (bool, error) {
		if other == "" {
			return true, nil
		}
		return sc.tenantRoom(other, false)
	}, func() error { return sc.wakeGroup(id, sc.now) })
}

// fillGroups fills the groups named, in order.
func (sc *sched) fillGroups(gs []string) error {
	for _, g := range gs {
		if err := sc.fillGroup(g); err != nil {
			return err
		}
	}
	return nil
}

// settleGroup does what a job of group moving to state leaves behind: the
// group's room is filled and, when the job finished, the group may be
// complete.
func (sc *sched) settleGroup(grp string, state queue.State) error {
	if grp == "" {
		return nil
	}
	if err := sc.fillGroup(grp); err != nil {
		return err
	}
	if state.Final() {
		return sc.groupSettle(grp)
	}
	return nil
}

// settleGroups fills, then settles, the groups named.
func (sc *sched) settleGroups(gs []string) error {
	if err := sc.fillGroups(gs); err != nil {
		return err
	}
	for _, g := range gs {
		if err := sc.groupSettle(g); err != nil {
			return err
		}
	}
	return nil
}

// pauseGroup pauses group id until end (0: resumes it): its pending jobs
// wait, each with its own tenant's MaxWait deadline, and their tenants get
// the room back.
func (sc *sched) pauseGroup(id string, end int64) (int64, error) {
	if err := sc.lock(kindGroup, id); err != nil {
		return 0, err
	}
	var until int64
	err := sc.row(`UPDATE __schema__.job_groups SET paused_until = CASE WHEN $1::bigint = 0 THEN 0 ELSE greatest(paused_until, $1::bigint) END
		WHERE id = $2 RETURNING paused_until`, end, id).Scan(&until)
	if isNoRows(err) {
		return 0, errorf(queue.ErrGroupNotFound, "group %s", id)
	}
	if err != nil {
		return 0, err
	}
	if until <= sc.now {
		return until, sc.fillGroup(id)
	}
	if err := sc.wakeGroup(id, until); err != nil {
		return 0, err
	}
	jobs, err := sc.waiting(`SELECT id, queue, tenant FROM __schema__.jobs WHERE grp = $1 AND grp <> '' AND state = 'pending'
		ORDER BY band, vrank, id LIMIT $2 FOR UPDATE`, id, 1<<62)
	if err != nil {
		return 0, err
	}
	var tenants []string
	for _, j := range jobs {
		ok, err := sc.hold(j.id, j.other, holdGroup)
		if err != nil {
			return 0, err
		}
		if ok {
			tenants = addOnce(tenants, j.other)
		}
	}
	// The held jobs left room in their tenants.
	for _, t := range tenants {
		if err := sc.fillTenant(t); err != nil {
			return 0, err
		}
	}
	return until, nil
}
