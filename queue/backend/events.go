package backend

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/sluicehq/sluice/queue/queuetype"
)

// NewEventID returns a fresh random event id, "evt_" and 32 hex digits.
// Outboxes use it so that ids are unique across stores, not only within
// one: a receiver deduplicates by it.
func NewEventID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+ panics instead)
	return "evt_" + hex.EncodeToString(b[:])
}

// EventForState returns the event a job reaching state s records in an
// outbox, and false for a state that is not final.
func EventForState(s queuetype.State) (queuetype.EventType, bool) {
	switch s {
	case queuetype.StateCompleted:
		return queuetype.EventJobCompleted, true
	case queuetype.StateFailed:
		return queuetype.EventJobFailed, true
	case queuetype.StateCancelled:
		return queuetype.EventJobCancelled, true
	}
	return "", false
}

// EventLog is served (Features.Events) by backends that keep a log of what
// happens to jobs and groups, written in the same atomic step as the
// transition itself, and kept for a bounded time (pruned by PruneEvents).
// Unlike the outbox, whose events leave once delivered, the log is read
// by cursor by any number of readers, each at its own pace.
//
// An event's ID is its cursor: ids of one log order as the events were
// recorded, and reading after an id returns the events recorded after it.
type EventLog interface {
	// ReadEvents returns up to max events recorded after the cursor
	// after ("" reads from the oldest retained), oldest first. When there
	// is none and block > 0, it waits up to block for one, woken by the
	// store's own notification, and returns what came (maybe nothing).
	ReadEvents(ctx context.Context, after string, max int, block time.Duration) (EventBatch, error)

	// LastEventID returns the id of the newest event, or "" when the log
	// is empty: reading after it returns only events recorded later.
	LastEventID(ctx context.Context) (string, error)

	// PruneEvents deletes events recorded at or before now minus
	// olderThan, and the oldest beyond the newest keep (0: no count
	// bound), at most limit per call (default 1000), and returns how
	// many it deleted.
	PruneEvents(ctx context.Context, olderThan time.Duration, keep, limit int) (int, error)
}

// EventBatch is what EventLog.ReadEvents read.
type EventBatch struct {
	// Events in log order.
	Events []queuetype.Event
	// Gap is true when events after the cursor were pruned before they
	// were read: a reader resuming from it has missed some.
	Gap bool
}
