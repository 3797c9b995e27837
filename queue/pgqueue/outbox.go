package pgqueue

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/sqlstore"
)

var _ backend.Outbox = (*Store)(nil)

// The outbox's statements; qualified per schema by outboxQueries.
const (
	qClaimEvents = `UPDATE __schema__.outbox SET due_at = $1, claim_token = $2 || '.' || seq
		WHERE seq IN (SELECT seq FROM __schema__.outbox WHERE due_at <= $3
			ORDER BY due_at, seq LIMIT $4 FOR UPDATE SKIP LOCKED)
		RETURNING seq, ` + sqlstore.EventColumns + `, claim_token, progress`
	qAckEvent      = `DELETE FROM __schema__.outbox WHERE event_id = $1 AND claim_token = $2`
	qRetryEvent    = `UPDATE __schema__.outbox SET due_at = $1, claim_token = NULL WHERE event_id = $2 AND claim_token = $3`
	qEventProgress = `SELECT progress FROM __schema__.outbox WHERE event_id = $1 FOR UPDATE`
	qSetEventProg  = `UPDATE __schema__.outbox SET progress = $1 WHERE event_id = $2`
	qAddDelivery   = `INSERT INTO __schema__.deliveries (event_id, event_type, job_id, grp, subscription,
		url, attempt, at, status, latency, error, outcome) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`
	qPruneDeliveries = `DELETE FROM __schema__.deliveries WHERE seq IN
		(SELECT seq FROM __schema__.deliveries WHERE at <= $1 ORDER BY at LIMIT $2 FOR UPDATE SKIP LOCKED)`
	qEmitEvent = `INSERT INTO __schema__.outbox (event_id, type, job_id, queue, kind, tenant, grp,
		state, attempt, error, data, created_at, due_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12)`
)

// outboxStatements are the outbox's statements on schema.
func outboxStatements(schema string) *sqlstore.OutboxStatements {
	q := func(text string) string { return qualify(text, schema) }
	return &sqlstore.OutboxStatements{
		Claim: q(qClaimEvents), Ack: q(qAckEvent), Retry: q(qRetryEvent),
		Progress: q(qEventProgress), SetProgress: q(qSetEventProg), AddDelivery: q(qAddDelivery),
		Prune: q(qPruneDeliveries), Emit: q(qEmitEvent), Deliveries: q("__schema__.deliveries"), Param: pgParam,
	}
}

// emitEvent records e in the outbox inside the caller's transaction db
// when the outbox is on, with a fresh ID and the time now. Jobs' final
// states are recorded by the outbox trigger; this is for the events that
// are no job's row change, such as a group's completion.
func (s *Store) emitEvent(ctx context.Context, db execer, e queue.Event, now int64) error {
	if !s.outbox {
		return nil
	}
	return db.exec(ctx, s.ob.Emit, sqlstore.EmitArgs(e, now)...)
}

// ClaimEvents implements backend.Outbox in one statement: the due events are
// locked with SKIP LOCKED, so claimers running at once take different ones.
func (s *Store) ClaimEvents(ctx context.Context, max int, leaseFor time.Duration) ([]backend.ClaimedEvent, error) {
	if err := sqlstore.CheckClaim(max, leaseFor); err != nil {
		return nil, err
	}
	if err := s.outboxOn("claim events"); err != nil {
		return nil, err
	}
	prefix, err := sqlstore.LeaseTokenPrefix()
	if err != nil {
		return nil, err
	}
	out, err := sqlstore.ClaimEvents(onPgx{ctx, s.pool}, s.ob, prefix, s.now(), max, leaseFor)
	return out, s.wrap("claim events", err)
}

// outboxOn returns ErrOutboxOff unless the store was opened with its
// outbox on, and ErrClosed once it is closed.
func (s *Store) outboxOn(op string) error {
	if !s.outbox {
		return queue.ErrOutboxOff
	}
	return s.check(op)
}

// AckEvent implements backend.Outbox.
func (s *Store) AckEvent(ctx context.Context, id, token string) error {
	if err := s.outboxOn("ack event"); err != nil {
		return err
	}
	return s.wrap("ack event", sqlstore.AckEvent(onPgx{ctx, s.pool}, s.ob, id, token))
}

// RetryEvent implements backend.Outbox.
func (s *Store) RetryEvent(ctx context.Context, id, token string, after time.Duration) error {
	if err := s.outboxOn("retry event"); err != nil {
		return err
	}
	return s.wrap("retry event", sqlstore.RetryEvent(onPgx{ctx, s.pool}, s.ob, id, token, s.now(), after))
}

// RecordDelivery implements backend.Outbox: the log entry and the event's
// progress in one transaction, the event's row locked while its progress
// is updated.
func (s *Store) RecordDelivery(ctx context.Context, d backend.Delivery) error {
	if err := s.outboxOn("record delivery"); err != nil {
		return err
	}
	if err := sqlstore.CheckDelivery(d); err != nil {
		return err
	}
	now := s.now()
	return s.tx(ctx, "record delivery", func(tx pgx.Tx) error {
		return sqlstore.RecordDelivery(onPgx{ctx, tx}, s.ob, d, now)
	})
}

// Deliveries implements backend.Outbox.
func (s *Store) Deliveries(ctx context.Context, f backend.DeliveryFilter) (*backend.DeliveryPage, error) {
	if err := s.outboxOn("deliveries"); err != nil {
		return nil, err
	}
	query, args, limit, err := sqlstore.DeliveriesQuery(s.ob, f)
	if err != nil {
		return nil, err
	}
	page, err := sqlstore.Deliveries(onPgx{ctx, s.pool}, query, args, limit)
	return page, s.wrap("deliveries", err)
}

// PruneDeliveries implements backend.Outbox.
func (s *Store) PruneDeliveries(ctx context.Context, olderThan time.Duration, limit int) (int, error) {
	if err := s.outboxOn("prune deliveries"); err != nil {
		return 0, err
	}
	n, err := sqlstore.PruneDeliveries(onPgx{ctx, s.pool}, s.ob, s.now(), olderThan, limit)
	return n, s.wrap("prune deliveries", err)
}
