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

// joinGroup is sqlstore's JoinGroup.
func (sc *sched) joinGroup(id string) error { return sc.JoinGroup(id) }
