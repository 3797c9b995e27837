package redisqueue

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

var _ backend.Outbox = (*Backend)(nil)

// outboxOff is the outbox argument list of a backend whose outbox is off.
var outboxOff = []any{"no-outbox"}

// outboxArgs returns the arguments that end every script that moves jobs
// (see lua/events.lua and loadScript): a nonce for the event ids, the
// outbox's key prefix and the marker "outbox"; or the single marker
// "no-outbox" when the outbox is off. evalCall and direct append them.
//
// The nonce keeps ids unique across stores (and across a store restored
// from an older copy, whose event counter went back), so it must differ
// per call, not be secret: a fast generator seeded from the system's
// randomness is enough.
func (b *Backend) outboxArgs() []any {
	if b.outbox == "" {
		return outboxOff
	}
	var nonce [16]byte
	const hexDigits = "0123456789abcdef"
	n := rand.Uint64()
	for i := range nonce {
		nonce[i] = hexDigits[n>>(60-4*uint(i))&15]
	}
	return []any{string(nonce[:]), b.outbox, "outbox"}
}

// outboxScript runs one of the outbox's own scripts on keys, those it
// touches whose names the call knows (built by keyring.outboxKey): ARGV
// is now, no queues, the outbox's prefix and args.
func (b *Backend) outboxScript(ctx context.Context, op string, s scriptRef, keys []string, args ...any) (any, error) {
	_, head := b.group(nil, 1+len(args))
	return b.eval(ctx, op, s, keys, append(append(head, b.outbox), args...)...)
}

// ClaimEvents implements backend.Outbox. It claims at most 1000 events per
// call; events due at the same time are claimed in the order they were
// recorded.
func (b *Backend) ClaimEvents(ctx context.Context, max int, leaseFor time.Duration) ([]backend.ClaimedEvent, error) {
	if max < 1 || leaseFor <= 0 {
		return nil, backend.InvalidArgument(queue.Field("", "ClaimEvents"), "needs max >= 1 and leaseFor > 0, got max %d, leaseFor %s", max, leaseFor)
	}
	if b.outbox == "" {
		return nil, queue.ErrOutboxOff
	}
	tokens, err := newToken()
	if err != nil {
		return nil, b.fault("claim events", err)
	}
	res, err := b.outboxScript(ctx, "claim events", scriptEventClaim, nil, min(max, maxLease), us(leaseFor), tokens)
	if err != nil {
		return nil, err
	}
	items, err := asList(res, "claim reply")
	if err != nil {
		return nil, b.fault("claim events", err)
	}
	out := make([]backend.ClaimedEvent, 0, len(items))
	for _, v := range items {
		c, err := decodeClaim(v)
		if err != nil {
			return nil, b.fault("claim events", err)
		}
		out = append(out, c)
	}
	return out, nil
}

// decodeClaim reads {id, token, event fields} (see lua/events.lua for the
// field names).
func decodeClaim(v any) (backend.ClaimedEvent, error) {
	var c backend.ClaimedEvent
	it, err := asList(v, "claimed event")
	if err != nil || len(it) != 3 {
		return c, errReply{"claimed event"}
	}
	fields, err := asList(it[2], "event fields")
	if err != nil {
		return c, err
	}
	e := &c.Event
	e.ID, c.Token = asString(it[0]), asString(it[1])
	for i := 0; i+1 < len(fields); i += 2 {
		f, v := asString(fields[i]), asString(fields[i+1])
		if sub, ok := strings.CutPrefix(f, "p:"); ok {
			if c.Progress == nil {
				c.Progress = map[string]backend.Progress{}
			}
			c.Progress[sub] = decodeProgress(v)
			continue
		}
		setEventField(e, f, v)
	}
	return c, nil
}

// setEventField sets one stored event field.
func setEventField(e *queue.Event, f, v string) {
	switch f {
	case "ty":
		e.Type = queue.EventType(v)
	case "ca":
		e.Time = micros(v)
	case "j":
		e.JobID = v
	case "q":
		e.Queue = v
	case "k":
		e.Kind = v
	case "tn":
		e.Tenant = v
	case "g":
		e.Group = v
	case "st":
		e.State = queue.State(v)
	case "at":
		e.Attempt = atoi(v)
	case "er":
		e.Error = v
	case "d":
		e.Data = json.RawMessage(v)
	}
}

// decodeProgress reads "<attempts>", with "!" appended once final.
func decodeProgress(v string) backend.Progress {
	n, final := strings.CutSuffix(v, "!")
	return backend.Progress{Attempts: atoi(n), Final: final}
}

// AckEvent implements backend.Outbox.
func (b *Backend) AckEvent(ctx context.Context, id, token string) error {
	return b.endClaim(ctx, "ack event", id, token, "")
}

// RetryEvent implements backend.Outbox.
func (b *Backend) RetryEvent(ctx context.Context, id, token string, after time.Duration) error {
	return b.endClaim(ctx, "retry event", id, token, us(max(after, 0)))
}

// endClaim runs the fenced end of a claim: acknowledge when after is "",
// else make the event due again after that many microseconds.
func (b *Backend) endClaim(ctx context.Context, op, id, token, after string) error {
	if b.outbox == "" {
		return queue.ErrOutboxOff
	}
	res, err := b.outboxScript(ctx, op, scriptEventDone, []string{b.keys.outboxKey("event", id)}, id, token, after)
	if err != nil {
		return err
	}
	if code := asString(res); code != codeOK {
		return fenceError(op, code)
	}
	return nil
}

// RecordDelivery implements backend.Outbox.
func (b *Backend) RecordDelivery(ctx context.Context, d backend.Delivery) error {
	if b.outbox == "" {
		return queue.ErrOutboxOff
	}
	if d.EventID == "" || d.Subscription == "" || d.Attempt < 1 || d.Outcome == "" {
		return backend.InvalidArgument(queue.Field("", "Delivery"), "needs EventID, Subscription, Attempt >= 1 and Outcome, got %q, %q, %d, %q",
			d.EventID, d.Subscription, d.Attempt, d.Outcome)
	}
	final := "0"
	if d.Outcome.Final() {
		final = "1"
	}
	keys := []string{b.keys.outboxKey("event", d.EventID), b.keys.outboxKey("log:event", d.EventID),
		b.keys.outboxKey("log:sub", d.Subscription)}
	if d.JobID != "" {
		keys = append(keys, b.keys.outboxKey("log:job", d.JobID))
	}
	_, err := b.outboxScript(ctx, "record delivery", scriptDeliveryRecord, keys, d.EventID, string(d.EventType), d.JobID,
		d.Group, d.Subscription, d.URL, d.Attempt, d.Status, int64(d.Latency), d.Error, string(d.Outcome), final)
	return err
}

// Deliveries implements backend.Outbox.
func (b *Backend) Deliveries(ctx context.Context, f backend.DeliveryFilter) (*backend.DeliveryPage, error) {
	if b.outbox == "" {
		return nil, queue.ErrOutboxOff
	}
	limit := f.Limit
	if limit <= 0 {
		limit = queue.DefaultListLimit
	}
	limit = min(limit, queue.MaxListLimit)
	if f.Cursor != "" {
		if n, err := strconv.ParseInt(f.Cursor, 10, 64); err != nil || n <= 0 || strconv.FormatInt(n, 10) != f.Cursor {
			return nil, backend.InvalidArgument(queue.Field("DeliveryFilter", "Cursor"), "is not a cursor from this backend: %q", f.Cursor)
		}
	}
	// The most selective filter picks the index the script walks.
	idx := b.keys.outbox + "log"
	switch {
	case f.EventID != "":
		idx = b.keys.outboxKey("log:event", f.EventID)
	case f.JobID != "":
		idx = b.keys.outboxKey("log:job", f.JobID)
	case f.Subscription != "":
		idx = b.keys.outboxKey("log:sub", f.Subscription)
	}
	res, err := b.outboxScript(ctx, "deliveries", scriptDeliveryList, []string{idx}, f.Cursor, limit+1, f.EventID, f.JobID, f.Subscription)
	if err != nil {
		return nil, err
	}
	items, err := asList(res, "deliveries reply")
	if err != nil {
		return nil, b.fault("deliveries", err)
	}
	page := &backend.DeliveryPage{Deliveries: make([]backend.Delivery, 0, min(len(items), limit))}
	for _, v := range items {
		d, err := decodeDelivery(v)
		if err != nil {
			return nil, b.fault("deliveries", err)
		}
		page.Deliveries = append(page.Deliveries, d)
	}
	if len(page.Deliveries) > limit {
		page.Deliveries = page.Deliveries[:limit]
		page.Next = strconv.FormatInt(page.Deliveries[limit-1].Seq, 10)
	}
	return page, nil
}

// decodeDelivery reads {seq, fields}, the fields in the order
// lua/delivery_list.lua asks for them.
func decodeDelivery(v any) (backend.Delivery, error) {
	var d backend.Delivery
	it, err := asList(v, "delivery")
	if err != nil || len(it) != 2 {
		return d, errReply{"delivery"}
	}
	f, err := asList(it[1], "delivery fields")
	if err != nil || len(f) != 12 {
		return d, errReply{"delivery fields"}
	}
	d.Seq = asInt(it[0])
	d.EventID, d.EventType = asString(f[0]), queue.EventType(asString(f[1]))
	d.JobID, d.Group, d.Subscription, d.URL = asString(f[2]), asString(f[3]), asString(f[4]), asString(f[5])
	d.Attempt, d.At, d.Status = atoi(asString(f[6])), micros(asString(f[7])), atoi(asString(f[8]))
	d.Latency = time.Duration(asInt(f[9]))
	d.Error, d.Outcome = asString(f[10]), backend.DeliveryOutcome(asString(f[11]))
	return d, nil
}

// PruneDeliveries implements backend.Outbox. It walks the log in the order
// entries were recorded and stops at the first one recorded after the cut,
// so an entry recorded under a clock that had gone back (such as another
// process's Options.Clock) may hold later ones until it is old enough.
func (b *Backend) PruneDeliveries(ctx context.Context, olderThan time.Duration, limit int) (int, error) {
	if b.outbox == "" {
		return 0, queue.ErrOutboxOff
	}
	if limit <= 0 {
		limit = backend.DefaultBatchLimit
	}
	res, err := b.outboxScript(ctx, "prune deliveries", scriptDeliveryPrune, nil, us(-olderThan), limit)
	if err != nil {
		return 0, err
	}
	return int(asInt(res)), nil
}
