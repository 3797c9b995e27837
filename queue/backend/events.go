package backend

import (
	"crypto/rand"
	"encoding/hex"

	"github.com/sluicehq/sluice/queue"
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
func EventForState(s queue.State) (queue.EventType, bool) {
	switch s {
	case queue.StateCompleted:
		return queue.EventJobCompleted, true
	case queue.StateFailed:
		return queue.EventJobFailed, true
	case queue.StateCancelled:
		return queue.EventJobCancelled, true
	}
	return "", false
}
