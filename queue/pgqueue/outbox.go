package pgqueue

import (
	"context"
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

var _ backend.Outbox = (*Store)(nil)

// outboxCols lists the event columns scanOutbox reads after seq.
const outboxCols = `event_id, type, job_id, queue, kind, tenant, grp, state, attempt, error, coalesce(data, ''), created_at`

// The outbox's statements; qualified per schema by outboxQueries.
const (
	qClaimEvents = `UPDATE __schema__.outbox SET due_at = $1, claim_token = $2 || '.' || seq
		WHERE seq IN (SELECT seq FROM __schema__.outbox WHERE due_at <= $3
			ORDER BY due_at, seq LIMIT $4 FOR UPDATE SKIP LOCKED)
		RETURNING seq, ` + outboxCols + `, claim_token, progress`
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

// emitEvent records e in the outbox inside the caller's transaction db
// when the outbox is on, with a fresh ID and the time now. Jobs' final
// states are recorded by the outbox trigger; this is for the events that
// are no job's row change, such as a group's completion.
func (s *Store) emitEvent(ctx context.Context, db execer, e queue.Event, now int64) error {
	if !s.outbox {
		return nil
	}
	var data *string
	if len(e.Data) > 0 {
		d := string(e.Data)
		data = &d
	}
	return db.exec(ctx, qualify(qEmitEvent, s.schema), backend.NewEventID(), string(e.Type), e.JobID, e.Queue, e.Kind,
		e.Tenant, e.Group, string(e.State), e.Attempt, e.Error, data, now)
}

// ClaimEvents implements backend.Outbox in one statement: the due events are
// locked with SKIP LOCKED, so claimers running at once take different ones.
func (s *Store) ClaimEvents(ctx context.Context, max int, leaseFor time.Duration) ([]backend.ClaimedEvent, error) {
	if max < 1 || leaseFor <= 0 {
		return nil, backend.InvalidArgument(queue.Field("", "ClaimEvents"), "needs max >= 1 and leaseFor > 0, got max %d, leaseFor %s", max, leaseFor)
	}
	if err := s.outboxOn("claim events"); err != nil {
		return nil, err
	}
	prefix, err := newToken()
	if err != nil {
		return nil, err
	}
	now := s.now()
	rows, err := s.pool.Query(ctx, qualify(qClaimEvents, s.schema), after(now, leaseFor), prefix, now, max)
	if err != nil {
		return nil, s.wrap("claim events", err)
	}
	type claim struct {
		seq int64
		c   backend.ClaimedEvent
	}
	claims, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (claim, error) {
		var c claim
		var progress string
		e, err := scanOutbox(r, &c.seq, &c.c.Token, &progress)
		if err != nil {
			return c, err
		}
		c.c.Event = *e
		return c, json.Unmarshal([]byte(progress), &c.c.Progress)
	})
	if err != nil {
		return nil, s.wrap("claim events", err)
	}
	// RETURNING keeps no order: hand the claims out in outbox order.
	sort.Slice(claims, func(i, j int) bool { return claims[i].seq < claims[j].seq })
	out := make([]backend.ClaimedEvent, len(claims))
	for i, c := range claims {
		out[i] = c.c
	}
	return out, nil
}

// scanOutbox scans seq, the columns of outboxCols, then extra.
func scanOutbox(s scanner, seq *int64, extra ...any) (*queue.Event, error) {
	var (
		e             queue.Event
		typ, st, data string
		created       int64
	)
	dest := []any{seq, &e.ID, &typ, &e.JobID, &e.Queue, &e.Kind, &e.Tenant, &e.Group, &st,
		&e.Attempt, &e.Error, &data, &created}
	if err := s.Scan(append(dest, extra...)...); err != nil {
		return nil, err
	}
	e.Type, e.State, e.Time = queue.EventType(typ), queue.State(st), fromNanos(created)
	if data != "" {
		e.Data = json.RawMessage(data)
	}
	return &e, nil
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
	return s.fencedExec(ctx, "ack event", qualify(qAckEvent, s.schema), id, token)
}

// RetryEvent implements backend.Outbox.
func (s *Store) RetryEvent(ctx context.Context, id, token string, after time.Duration) error {
	if err := s.outboxOn("retry event"); err != nil {
		return err
	}
	due := s.now() + int64(min(max(after, 0), queue.MaxDuration))
	return s.fencedExec(ctx, "retry event", qualify(qRetryEvent, s.schema), due, id, token)
}

// fencedExec runs a statement fenced by a claim token: ErrLeaseLost when
// it changed no row.
func (s *Store) fencedExec(ctx context.Context, op, query string, args ...any) error {
	n, err := s.execN(ctx, query, args...)
	if err != nil {
		return s.wrap(op, err)
	}
	if n == 0 {
		return queue.ErrLeaseLost
	}
	return nil
}

// RecordDelivery implements backend.Outbox: the log entry and the event's
// progress in one transaction, the event's row locked while its progress
// is updated.
func (s *Store) RecordDelivery(ctx context.Context, d backend.Delivery) error {
	if err := s.outboxOn("record delivery"); err != nil {
		return err
	}
	if d.EventID == "" || d.Subscription == "" || d.Attempt < 1 || d.Outcome == "" {
		return backend.InvalidArgument(queue.Field("", "Delivery"), "needs EventID, Subscription, Attempt >= 1 and Outcome, got %q, %q, %d, %q",
			d.EventID, d.Subscription, d.Attempt, d.Outcome)
	}
	now := s.now()
	return s.tx(ctx, "record delivery", func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, qualify(qAddDelivery, s.schema), d.EventID, string(d.EventType), d.JobID, d.Group,
			d.Subscription, d.URL, d.Attempt, now, d.Status, int64(d.Latency), d.Error, string(d.Outcome)); err != nil {
			return err
		}
		return s.addProgress(ctx, tx, d)
	})
}

// addProgress counts d's attempt in its event's progress, if the event is
// still in the outbox.
func (s *Store) addProgress(ctx context.Context, tx pgx.Tx, d backend.Delivery) error {
	var raw string
	err := tx.QueryRow(ctx, qualify(qEventProgress, s.schema), d.EventID).Scan(&raw)
	if isNoRows(err) {
		return nil
	} else if err != nil {
		return err
	}
	prog := map[string]backend.Progress{}
	if err := json.Unmarshal([]byte(raw), &prog); err != nil {
		return err
	}
	p := prog[d.Subscription]
	p.Attempts = max(p.Attempts+1, d.Attempt)
	p.Final = p.Final || d.Outcome.Final()
	prog[d.Subscription] = p
	out, err := json.Marshal(prog)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, qualify(qSetEventProg, s.schema), string(out), d.EventID)
	return err
}

// Deliveries implements backend.Outbox.
func (s *Store) Deliveries(ctx context.Context, f backend.DeliveryFilter) (*backend.DeliveryPage, error) {
	if err := s.outboxOn("deliveries"); err != nil {
		return nil, err
	}
	limit := f.Limit
	if limit <= 0 {
		limit = queue.DefaultListLimit
	}
	limit = min(limit, queue.MaxListLimit)
	where, args := []string{"true"}, []any{}
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if f.Cursor != "" {
		n, err := strconv.ParseInt(f.Cursor, 10, 64)
		if err != nil || n <= 0 {
			return nil, backend.InvalidArgument(queue.Field("DeliveryFilter", "Cursor"), "is not a cursor from this backend: %q", f.Cursor)
		}
		where = append(where, "seq < "+arg(n))
	}
	for _, c := range []struct{ col, v string }{{"job_id", f.JobID}, {"subscription", f.Subscription}, {"event_id", f.EventID}} {
		if c.v != "" {
			where = append(where, c.col+" = "+arg(c.v))
		}
	}
	query := qualify(`SELECT seq, event_id, event_type, job_id, grp, subscription, url, attempt, at, status,
		latency, error, outcome FROM __schema__.deliveries WHERE `+strings.Join(where, " AND ")+
		` ORDER BY seq DESC LIMIT `+arg(limit+1), s.schema)
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, s.wrap("deliveries", err)
	}
	ds, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (backend.Delivery, error) { return scanDelivery(r) })
	if err != nil {
		return nil, s.wrap("deliveries", err)
	}
	page := &backend.DeliveryPage{Deliveries: ds}
	if len(ds) > limit {
		page.Deliveries = ds[:limit]
		page.Next = strconv.FormatInt(ds[limit-1].Seq, 10)
	}
	return page, nil
}

func scanDelivery(s scanner) (backend.Delivery, error) {
	var (
		d            backend.Delivery
		typ, outcome string
		at, latency  int64
	)
	err := s.Scan(&d.Seq, &d.EventID, &typ, &d.JobID, &d.Group, &d.Subscription, &d.URL,
		&d.Attempt, &at, &d.Status, &latency, &d.Error, &outcome)
	d.EventType, d.Outcome = queue.EventType(typ), backend.DeliveryOutcome(outcome)
	d.At, d.Latency = fromNanos(at), time.Duration(latency)
	return d, err
}

// PruneDeliveries implements backend.Outbox.
func (s *Store) PruneDeliveries(ctx context.Context, olderThan time.Duration, limit int) (int, error) {
	if err := s.outboxOn("prune deliveries"); err != nil {
		return 0, err
	}
	if limit <= 0 {
		limit = backend.DefaultBatchLimit
	}
	n, err := s.execN(ctx, qualify(qPruneDeliveries, s.schema), s.now()-int64(olderThan), limit)
	return int(n), s.wrap("prune deliveries", err)
}
