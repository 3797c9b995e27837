package sqlstore

import (
	"encoding/json"
	"strconv"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// LogColumns lists the event log's columns that ReadLog reads, after the
// event's place in the log.
const LogColumns = `type, job_id, queue, kind, tenant, grp, state, attempt, error, coalesce(data, ''), created_at`

// ParseEventID reads an event id of the log, its place; "" is the start
// of the log.
func ParseEventID(id string) (int64, error) {
	if id == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil || n < 0 {
		return 0, backend.InvalidArgument(queue.Field("", "after"), "is not an event id of this backend: %q", id)
	}
	return n, nil
}

// ReadLog reads rows of place then LogColumns as events, the place their
// ID, and closes rows; it also returns the place of the first (0 for
// none).
func ReadLog(rows Rows, err error) ([]queue.Event, int64, error) {
	var first int64
	evs, err := CollectRows(rows, err, func(r Row) (queue.Event, error) {
		var (
			e             queue.Event
			pos, created  int64
			typ, st, data string
		)
		if err := r.Scan(&pos, &typ, &e.JobID, &e.Queue, &e.Kind, &e.Tenant, &e.Group, &st,
			&e.Attempt, &e.Error, &data, &created); err != nil {
			return e, err
		}
		if first == 0 {
			first = pos
		}
		e.ID, e.Type, e.State, e.Time = strconv.FormatInt(pos, 10), queue.EventType(typ), queue.State(st), FromNanos(created)
		if data != "" {
			e.Data = json.RawMessage(data)
		}
		return e, nil
	})
	return evs, first, err
}
