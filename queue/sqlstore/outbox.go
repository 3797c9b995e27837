package sqlstore

import (
	"database/sql"
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// EventColumns lists the outbox columns ScanEvent reads after seq.
const EventColumns = `event_id, type, job_id, queue, kind, tenant, grp, state, attempt, error, data, created_at`

// deliveryColumns lists the columns of a delivery's log entry, in the
// order scanDelivery reads them.
const deliveryColumns = `seq, event_id, event_type, job_id, grp, subscription, url, attempt, at, status,
	latency, error, outcome`

// OutboxStatements are a dialect's statements of the outbox (backend.Outbox).
type OutboxStatements struct {
	// Claim takes (due_at, token prefix, now, max), sets the claim of at
	// most max due events and returns seq, EventColumns, claim_token and
	// progress of each.
	Claim string
	// Ack deletes event $1 if its claim token is $2.
	Ack string
	// Retry sets event $2's due time to $1 and drops its claim if its
	// claim token is $3.
	Retry string
	// Progress returns event $1's progress (locking its row where the
	// dialect locks rows); SetProgress sets it to $1 for event $2.
	Progress, SetProgress string
	// AddDelivery logs one delivery attempt: the 12 arguments of
	// deliveryArgs.
	AddDelivery string
	// Prune deletes at most $2 log entries at or before $1.
	Prune string
	// Emit records an event: the 12 arguments of EmitArgs.
	Emit string
	// Deliveries is the table of the delivery log, as FROM names it.
	Deliveries string
	// Param is the dialect's n-th positional parameter.
	Param func(n int) string
}

// EmitArgs are the arguments of OutboxStatements.Emit for e, recorded
// now under a fresh ID.
func EmitArgs(e queue.Event, now int64) []any {
	var data *string
	if len(e.Data) > 0 {
		d := string(e.Data)
		data = &d
	}
	return []any{backend.NewEventID(), string(e.Type), e.JobID, e.Queue, e.Kind,
		e.Tenant, e.Group, string(e.State), e.Attempt, e.Error, data, now}
}

// CheckClaim refuses the arguments of a ClaimEvents that cannot claim.
func CheckClaim(max int, leaseFor time.Duration) error {
	if max < 1 || leaseFor <= 0 {
		return backend.InvalidArgument(queue.Field("", "ClaimEvents"), "needs max >= 1 and leaseFor > 0, got max %d, leaseFor %s", max, leaseFor)
	}
	return nil
}

// ClaimEvents claims at most max due events for leaseFor with tokens
// under prefix, in one statement, and returns them in outbox order.
func ClaimEvents(tx Tx, st *OutboxStatements, prefix string, now int64, max int, leaseFor time.Duration) ([]backend.ClaimedEvent, error) {
	type claim struct {
		seq int64
		c   backend.ClaimedEvent
	}
	rows, err := tx.Query(st.Claim, NanosAfter(now, leaseFor), prefix, now, max)
	claims, err := CollectRows(rows, err, func(r Row) (claim, error) {
		var c claim
		var progress string
		e, err := ScanEvent(r, &c.seq, &c.c.Token, &progress)
		if err != nil {
			return c, err
		}
		c.c.Event = *e
		return c, json.Unmarshal([]byte(progress), &c.c.Progress)
	})
	if err != nil {
		return nil, err
	}
	// RETURNING keeps no order: hand the claims out in outbox order.
	sort.Slice(claims, func(i, j int) bool { return claims[i].seq < claims[j].seq })
	out := make([]backend.ClaimedEvent, len(claims))
	for i, c := range claims {
		out[i] = c.c
	}
	return out, nil
}

// ScanEvent scans seq, the columns of EventColumns, then extra.
func ScanEvent(r Row, seq *int64, extra ...any) (*queue.Event, error) {
	var (
		e       queue.Event
		typ, st string
		data    sql.NullString
		created int64
	)
	dest := []any{seq, &e.ID, &typ, &e.JobID, &e.Queue, &e.Kind, &e.Tenant, &e.Group, &st,
		&e.Attempt, &e.Error, &data, &created}
	if err := r.Scan(append(dest, extra...)...); err != nil {
		return nil, err
	}
	e.Type, e.State, e.Time = queue.EventType(typ), queue.State(st), FromNanos(created)
	if data.String != "" {
		e.Data = json.RawMessage(data.String)
	}
	return &e, nil
}

// AckEvent deletes a claimed event; ErrLeaseLost when token no longer
// holds it.
func AckEvent(tx Tx, st *OutboxStatements, id, token string) error {
	return ClaimHeld(tx.Exec(st.Ack, id, token))
}

// RetryEvent hands a claimed event back, due after; ErrLeaseLost when
// token no longer holds it.
func RetryEvent(tx Tx, st *OutboxStatements, id, token string, now int64, after time.Duration) error {
	return ClaimHeld(tx.Exec(st.Retry, NanosAfter(now, after), id, token))
}

// CheckDelivery refuses a delivery record that lacks what the log keys on.
func CheckDelivery(d backend.Delivery) error {
	if d.EventID == "" || d.Subscription == "" || d.Attempt < 1 || d.Outcome == "" {
		return backend.InvalidArgument(queue.Field("", "Delivery"), "needs EventID, Subscription, Attempt >= 1 and Outcome, got %q, %q, %d, %q",
			d.EventID, d.Subscription, d.Attempt, d.Outcome)
	}
	return nil
}

// RecordDelivery logs d at now and counts it in its event's progress, if
// the event is still in the outbox; tx is one transaction.
func RecordDelivery(tx Tx, st *OutboxStatements, d backend.Delivery, now int64) error {
	if _, err := tx.Exec(st.AddDelivery, d.EventID, string(d.EventType), d.JobID, d.Group, d.Subscription,
		d.URL, d.Attempt, now, d.Status, int64(d.Latency), d.Error, string(d.Outcome)); err != nil {
		return err
	}
	var raw string
	err := tx.QueryRow(st.Progress, d.EventID).Scan(&raw)
	if IsNoRows(err) {
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
	_, err = tx.Exec(st.SetProgress, string(out), d.EventID)
	return err
}

// DeliveriesQuery is the query of one page of f, newest first, with its
// arguments and the page's size; it reads one row more than the page, to
// know whether another follows.
func DeliveriesQuery(st *OutboxStatements, f backend.DeliveryFilter) (string, []any, int, error) {
	limit := PageLimit(f.Limit, queue.DefaultListLimit, queue.MaxListLimit)
	where, args := []string{"1 = 1"}, []any{}
	arg := func(v any) string {
		args = append(args, v)
		return st.Param(len(args))
	}
	if f.Cursor != "" {
		n, err := strconv.ParseInt(f.Cursor, 10, 64)
		if err != nil || n <= 0 {
			return "", nil, 0, backend.InvalidArgument(queue.Field("DeliveryFilter", "Cursor"), "is not a cursor from this backend: %q", f.Cursor)
		}
		where = append(where, "seq < "+arg(n))
	}
	for _, c := range []struct{ col, v string }{{"job_id", f.JobID}, {"subscription", f.Subscription}, {"event_id", f.EventID}} {
		if c.v != "" {
			where = append(where, c.col+" = "+arg(c.v))
		}
	}
	query := `SELECT ` + deliveryColumns + ` FROM ` + st.Deliveries + ` WHERE ` + strings.Join(where, " AND ") +
		` ORDER BY seq DESC LIMIT ` + arg(limit+1)
	return query, args, limit, nil
}

// Deliveries reads the page of DeliveriesQuery.
func Deliveries(tx Tx, query string, args []any, limit int) (*backend.DeliveryPage, error) {
	rows, err := tx.Query(query, args...)
	ds, err := CollectRows(rows, err, scanDelivery)
	if err != nil {
		return nil, err
	}
	page := &backend.DeliveryPage{Deliveries: ds}
	if len(ds) > limit {
		page.Deliveries = ds[:limit]
		page.Next = strconv.FormatInt(ds[limit-1].Seq, 10)
	}
	return page, nil
}

func scanDelivery(r Row) (backend.Delivery, error) {
	var (
		d            backend.Delivery
		typ, outcome string
		at, latency  int64
	)
	err := r.Scan(&d.Seq, &d.EventID, &typ, &d.JobID, &d.Group, &d.Subscription, &d.URL,
		&d.Attempt, &at, &d.Status, &latency, &d.Error, &outcome)
	d.EventType, d.Outcome = queue.EventType(typ), backend.DeliveryOutcome(outcome)
	d.At, d.Latency = FromNanos(at), time.Duration(latency)
	return d, err
}

// PruneDeliveries deletes at most limit (default DefaultBatchLimit) log
// entries older than olderThan.
func PruneDeliveries(tx Tx, st *OutboxStatements, now int64, olderThan time.Duration, limit int) (int, error) {
	if limit <= 0 {
		limit = backend.DefaultBatchLimit
	}
	n, err := tx.Exec(st.Prune, now-int64(olderThan), limit)
	return int(n), err
}
