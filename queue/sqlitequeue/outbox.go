package sqlitequeue

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/sqlstore"
)

var _ backend.Outbox = (*Backend)(nil)

var (
	// qEmitJob records the event of the job's current (final) state,
	// copying the job's fields from its row in the same statement.
	qEmitJob = hot(`INSERT INTO outbox (event_id, type, job_id, queue, kind, tenant, grp,
		state, attempt, error, created_at, due_at)
		SELECT ?1, ?2, CAST(id AS TEXT), queue, kind, tenant, grp, state, attempt,
		CASE WHEN state = 'completed' THEN '' ELSE last_error END, ?3, ?3 FROM jobs WHERE id = ?4`)
	qEmitEvent = hot(`INSERT INTO outbox (event_id, type, job_id, queue, kind, tenant, grp,
		state, attempt, error, data, created_at, due_at)
		VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?12)`)
	qClaim = hot(`UPDATE outbox SET due_at = ?1, claim_token = ?2 || '.' || seq
		WHERE seq IN (SELECT seq FROM outbox WHERE due_at <= ?3 ORDER BY due_at, seq LIMIT ?4)
		RETURNING seq, ` + sqlstore.EventColumns + `, claim_token, progress`)
	qAck           = hot(`DELETE FROM outbox WHERE event_id = ? AND claim_token = ?`)
	qRetry         = hot(`UPDATE outbox SET due_at = ?, claim_token = NULL WHERE event_id = ? AND claim_token = ?`)
	qProgress      = hot(`SELECT progress FROM outbox WHERE event_id = ?`)
	qSetProgress   = hot(`UPDATE outbox SET progress = ? WHERE event_id = ?`)
	qInsertAttempt = hot(`INSERT INTO deliveries (event_id, event_type, job_id, grp, subscription,
		url, attempt, at, status, latency, error, outcome) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	qPrune = hot(`DELETE FROM deliveries WHERE seq IN
		(SELECT seq FROM deliveries WHERE at <= ? ORDER BY at LIMIT ?)`)
)

// emitState records, when the outbox is on and s is final, the event of
// job id having just reached s. Call it inside the transition's write,
// after the job's row has its new state, so both commit or neither does.
func (b *Backend) emitState(tx *wtx, id int64, s queue.State, now int64) error {
	typ, ok := backend.EventForState(s)
	if !ok || !b.outbox {
		return nil
	}
	_, err := tx.exec(qEmitJob, backend.NewEventID(), string(typ), now, id)
	return err
}

// emitJob is emitState for a job id in its string form.
func (b *Backend) emitJob(tx *wtx, id string, s queue.State, now int64) error {
	rid, err := sqlstore.ParseID(id)
	if err != nil {
		return err
	}
	return b.emitState(tx, rid, s, now)
}

// outboxQ are the outbox's statements.
var outboxQ = &sqlstore.OutboxStatements{
	Claim: qClaim, Ack: qAck, Retry: qRetry, Progress: qProgress, SetProgress: qSetProgress,
	AddDelivery: qInsertAttempt, Prune: qPrune, Emit: qEmitEvent, Deliveries: "deliveries", Param: sqlParam,
}

// emitEvent records e (its ID and Time are set here) when the outbox is
// on, inside the caller's write; for events that are not a job's final
// state, such as a group's completion.
func (b *Backend) emitEvent(tx *wtx, e queue.Event, now int64) error {
	if !b.outbox {
		return nil
	}
	_, err := tx.exec(qEmitEvent, sqlstore.EmitArgs(e, now)...)
	return err
}

// ClaimEvents implements backend.Outbox.
func (b *Backend) ClaimEvents(ctx context.Context, max int, leaseFor time.Duration) ([]backend.ClaimedEvent, error) {
	if err := sqlstore.CheckClaim(max, leaseFor); err != nil {
		return nil, err
	}
	if !b.outbox {
		return nil, queue.ErrOutboxOff
	}
	prefix, err := sqlstore.LeaseTokenPrefix()
	if err != nil {
		return nil, err
	}
	now := b.now()
	var out []backend.ClaimedEvent
	err = b.write(ctx, "claim events", func(tx *wtx) error {
		out, err = sqlstore.ClaimEvents(tx, outboxQ, prefix, now, max, leaseFor)
		return err
	})
	return out, err
}

// AckEvent implements backend.Outbox.
func (b *Backend) AckEvent(ctx context.Context, id, token string) error {
	if !b.outbox {
		return queue.ErrOutboxOff
	}
	return b.write(ctx, "ack event", func(tx *wtx) error {
		return sqlstore.AckEvent(tx, outboxQ, id, token)
	})
}

// RetryEvent implements backend.Outbox.
func (b *Backend) RetryEvent(ctx context.Context, id, token string, after time.Duration) error {
	if !b.outbox {
		return queue.ErrOutboxOff
	}
	now := b.now()
	return b.write(ctx, "retry event", func(tx *wtx) error {
		return sqlstore.RetryEvent(tx, outboxQ, id, token, now, after)
	})
}

// RecordDelivery implements backend.Outbox.
func (b *Backend) RecordDelivery(ctx context.Context, d backend.Delivery) error {
	if !b.outbox {
		return queue.ErrOutboxOff
	}
	if err := sqlstore.CheckDelivery(d); err != nil {
		return err
	}
	now := b.now()
	return b.write(ctx, "record delivery", func(tx *wtx) error {
		return sqlstore.RecordDelivery(tx, outboxQ, d, now)
	})
}

// Deliveries implements backend.Outbox.
func (b *Backend) Deliveries(ctx context.Context, f backend.DeliveryFilter) (*backend.DeliveryPage, error) {
	if b.closed.Load() {
		return nil, b.wrap("deliveries", queue.ErrClosed)
	}
	query, args, limit, err := sqlstore.DeliveriesQuery(outboxQ, f)
	if err != nil {
		return nil, err
	}
	page, err := sqlstore.Deliveries(sqlstore.OnSQL{Ctx: ctx, Q: b.r}, query, args, limit)
	return page, b.wrap("deliveries", err)
}

// PruneDeliveries implements backend.Outbox.
func (b *Backend) PruneDeliveries(ctx context.Context, olderThan time.Duration, limit int) (int, error) {
	now := b.now()
	n := 0
	err := b.write(ctx, "prune deliveries", func(tx *wtx) error {
		var err error
		n, err = sqlstore.PruneDeliveries(tx, outboxQ, now, olderThan, limit)
		return err
	})
	return n, err
}
