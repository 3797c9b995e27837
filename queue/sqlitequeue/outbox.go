package sqlitequeue

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

var _ backend.Outbox = (*Backend)(nil)

// eventCols lists the columns scanEvent reads, in order.
const eventCols = `event_id, type, job_id, queue, kind, tenant, grp, state, attempt, error, data, created_at`

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
		RETURNING seq, ` + eventCols + `, claim_token, progress`)
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
	rid, err := parseID(id)
	if err != nil {
		return err
	}
	return b.emitState(tx, rid, s, now)
}

// emitEvent records e (its ID and Time are set here) when the outbox is
// on, inside the caller's write; for events that are not a job's final
// state, such as a group's completion.
func (b *Backend) emitEvent(tx *wtx, e queue.Event, now int64) error {
	if !b.outbox {
		return nil
	}
	var data []byte
	if len(e.Data) > 0 {
		data = e.Data
	}
	_, err := tx.exec(qEmitEvent, backend.NewEventID(), string(e.Type), e.JobID, e.Queue, e.Kind,
		e.Tenant, e.Group, string(e.State), e.Attempt, e.Error, data, now)
	return err
}

// ClaimEvents implements backend.Outbox.
func (b *Backend) ClaimEvents(ctx context.Context, max int, leaseFor time.Duration) ([]backend.ClaimedEvent, error) {
	if max < 1 || leaseFor <= 0 {
		return nil, backend.InvalidArgument(queue.Field("", "ClaimEvents"), "needs max >= 1 and leaseFor > 0, got max %d, leaseFor %s", max, leaseFor)
	}
	if !b.outbox {
		return nil, queue.ErrOutboxOff
	}
	prefix, err := newToken()
	if err != nil {
		return nil, err
	}
	now := b.now()
	var seqs []int64
	var out []backend.ClaimedEvent
	err = b.write(ctx, "claim events", func(tx *wtx) error {
		seqs, out = seqs[:0], out[:0]
		rows, err := tx.query(qClaim, now+int64(leaseFor), prefix, now, max)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var seq int64
			c, err := scanClaim(rows, &seq)
			if err != nil {
				return err
			}
			seqs, out = append(seqs, seq), append(out, c)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	// RETURNING promises no order: put the claims in outbox order.
	idx := make([]int, len(out))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(i, j int) bool { return seqs[idx[i]] < seqs[idx[j]] })
	sorted := make([]backend.ClaimedEvent, len(out))
	for i, k := range idx {
		sorted[i] = out[k]
	}
	return sorted, nil
}

func scanClaim(s scanner, seq *int64) (backend.ClaimedEvent, error) {
	var (
		c        backend.ClaimedEvent
		progress string
	)
	e, err := scanEvent(s, seq, &c.Token, &progress)
	if err != nil {
		return c, err
	}
	c.Event = *e
	if err := json.Unmarshal([]byte(progress), &c.Progress); err != nil {
		return c, err
	}
	return c, nil
}

// scanEvent scans an optional leading seq, the event columns, then extra.
func scanEvent(s scanner, seq *int64, extra ...any) (*queue.Event, error) {
	var (
		e       queue.Event
		typ, st string
		data    []byte
		created int64
	)
	dest := []any{seq, &e.ID, &typ, &e.JobID, &e.Queue, &e.Kind, &e.Tenant, &e.Group, &st,
		&e.Attempt, &e.Error, &data, &created}
	if err := s.Scan(append(dest, extra...)...); err != nil {
		return nil, err
	}
	e.Type, e.State, e.Time = queue.EventType(typ), queue.State(st), fromNanos(created)
	if len(data) > 0 {
		e.Data = json.RawMessage(data)
	}
	return &e, nil
}

// AckEvent implements backend.Outbox.
func (b *Backend) AckEvent(ctx context.Context, id, token string) error {
	if !b.outbox {
		return queue.ErrOutboxOff
	}
	return b.write(ctx, "ack event", func(tx *wtx) error {
		return claimHeld(tx.exec(qAck, id, token))
	})
}

// RetryEvent implements backend.Outbox.
func (b *Backend) RetryEvent(ctx context.Context, id, token string, after time.Duration) error {
	if !b.outbox {
		return queue.ErrOutboxOff
	}
	due := b.now() + int64(max(after, 0))
	return b.write(ctx, "retry event", func(tx *wtx) error {
		return claimHeld(tx.exec(qRetry, due, id, token))
	})
}

// claimHeld turns "no row changed" into ErrLeaseLost.
func claimHeld(res sql.Result, err error) error {
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return queue.ErrLeaseLost
	}
	return nil
}

// RecordDelivery implements backend.Outbox.
func (b *Backend) RecordDelivery(ctx context.Context, d backend.Delivery) error {
	if !b.outbox {
		return queue.ErrOutboxOff
	}
	if d.EventID == "" || d.Subscription == "" || d.Attempt < 1 || d.Outcome == "" {
		return backend.InvalidArgument(queue.Field("", "Delivery"), "needs EventID, Subscription, Attempt >= 1 and Outcome, got %q, %q, %d, %q",
			d.EventID, d.Subscription, d.Attempt, d.Outcome)
	}
	now := b.now()
	return b.write(ctx, "record delivery", func(tx *wtx) error {
		if _, err := tx.exec(qInsertAttempt, d.EventID, string(d.EventType), d.JobID, d.Group, d.Subscription,
			d.URL, d.Attempt, now, d.Status, int64(d.Latency), d.Error, string(d.Outcome)); err != nil {
			return err
		}
		return addProgress(tx, d)
	})
}

// addProgress counts d's attempt in its event's progress, if the event is
// still in the outbox.
func addProgress(tx *wtx, d backend.Delivery) error {
	var raw string
	err := tx.queryRow(qProgress, d.EventID).Scan(&raw)
	if errors.Is(err, sql.ErrNoRows) {
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
	_, err = tx.exec(qSetProgress, string(out), d.EventID)
	return err
}

// Deliveries implements backend.Outbox.
func (b *Backend) Deliveries(ctx context.Context, f backend.DeliveryFilter) (*backend.DeliveryPage, error) {
	if b.closed.Load() {
		return nil, b.wrap("deliveries", queue.ErrClosed)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = queue.DefaultListLimit
	}
	limit = min(limit, queue.MaxListLimit)
	where, args := []string{"1"}, []any{}
	if f.Cursor != "" {
		n, err := strconv.ParseInt(f.Cursor, 10, 64)
		if err != nil || n <= 0 {
			return nil, backend.InvalidArgument(queue.Field("DeliveryFilter", "Cursor"), "is not a cursor from this backend: %q", f.Cursor)
		}
		where, args = append(where, "seq < ?"), append(args, n)
	}
	for _, c := range []struct{ col, v string }{{"job_id", f.JobID}, {"subscription", f.Subscription}, {"event_id", f.EventID}} {
		if c.v != "" {
			where, args = append(where, c.col+" = ?"), append(args, c.v)
		}
	}
	rows, err := b.r.QueryContext(ctx, `SELECT seq, event_id, event_type, job_id, grp, subscription, url,
		attempt, at, status, latency, error, outcome FROM deliveries WHERE `+strings.Join(where, " AND ")+
		` ORDER BY seq DESC LIMIT ?`, append(args, limit+1)...)
	if err != nil {
		return nil, b.wrap("deliveries", err)
	}
	defer rows.Close()
	page := &backend.DeliveryPage{}
	for rows.Next() {
		d, err := scanDelivery(rows)
		if err != nil {
			return nil, b.wrap("deliveries", err)
		}
		page.Deliveries = append(page.Deliveries, d)
	}
	if err := rows.Err(); err != nil {
		return nil, b.wrap("deliveries", err)
	}
	if len(page.Deliveries) > limit {
		page.Deliveries = page.Deliveries[:limit]
		page.Next = strconv.FormatInt(page.Deliveries[limit-1].Seq, 10)
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
func (b *Backend) PruneDeliveries(ctx context.Context, olderThan time.Duration, limit int) (int, error) {
	if limit <= 0 {
		limit = backend.DefaultBatchLimit
	}
	cut := b.now() - int64(olderThan)
	n := 0
	err := b.write(ctx, "prune deliveries", func(tx *wtx) error {
		res, err := tx.exec(qPrune, cut, limit)
		if err != nil {
			return err
		}
		m, err := res.RowsAffected()
		n = int(m)
		return err
	})
	return n, err
}
