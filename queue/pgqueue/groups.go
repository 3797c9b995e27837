package pgqueue

import (
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/sqlstore"
)

const groupCols = `id, tenant, max_conc, min_interval, ttl, deadline, completion_kind, completion_queue,
	coalesce(completion_payload, ''::bytea), webhook, created_at, cancel_requested, done_at, completion_job,
	last_start, paused_until, gone_completed, gone_failed, gone_cancelled`

const qGroup = `SELECT ` + groupCols + ` FROM __schema__.job_groups WHERE id = $1`

func scanGroup(row scanner) (*sqlstore.GroupRow, error) {
	g := &sqlstore.GroupRow{}
	var minInterval, ttl int64
	var webhook string
	var payload []byte
	err := row.Scan(&g.Spec.ID, &g.Spec.Tenant, &g.Spec.MaxConcurrency, &minInterval, &ttl, &g.Deadline,
		&g.Spec.CompletionKind, &g.Spec.CompletionQueue, &payload, &webhook, &g.CreatedAt, &g.CancelRequested,
		&g.DoneAt, &g.CompletionJob, &g.LastStart, &g.PausedUntil, &g.Gone[0], &g.Gone[1], &g.Gone[2])
	if isNoRows(err) {
		return nil, queue.ErrGroupNotFound
	}
	if err != nil {
		return nil, err
	}
	if len(payload) > 0 {
		g.Spec.CompletionPayload = payload
	}
	g.Spec.MinInterval, g.Spec.TTL = time.Duration(minInterval), time.Duration(ttl)
	if g.Spec.Webhook, err = queue.DecodeWebhook(webhook); err != nil {
		return nil, err
	}
	return g, nil
}

// Group implements sqlstore.SchedDialect: a group's row;
// ErrGroupNotFound when none.
func (sc *sched) Group(id string) (*sqlstore.GroupRow, error) {
	return scanGroup(sc.row(qGroup, id))
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
		return until, sc.FillGroup(id)
	}
	if err := sc.WakeGroup(id, until); err != nil {
		return 0, err
	}
	jobs, err := sc.Waiting(`SELECT id, queue, tenant FROM __schema__.jobs WHERE grp = $1 AND grp <> '' AND state = 'pending'
		ORDER BY band, vrank, id LIMIT $2 FOR UPDATE`, id, 1<<62)
	if err != nil {
		return 0, err
	}
	var tenants []string
	for _, j := range jobs {
		ok, err := sc.Hold(j.ID, j.Other, sqlstore.HoldGroup)
		if err != nil {
			return 0, err
		}
		if ok {
			tenants = addOnce(tenants, j.Other)
		}
	}
	// The held jobs left room in their tenants.
	for _, t := range tenants {
		if err := sc.FillTenant(t); err != nil {
			return 0, err
		}
	}
	return until, nil
}
