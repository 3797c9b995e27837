package backend

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/queue/queuetype"
)

// Outbox is served (Features.Outbox) by backends that record events in a
// durable outbox: the event of a transition is written in the same atomic step as
// the transition itself (Complete, Fail, Cancel, Snooze/Requeue of a
// cancelled job, RescueExpired, and a group's completion), so a job that
// reached a final state always has its event, and an event never exists
// for a transition that did not happen. A consumer (queue/webhook's
// Dispatcher) claims events, delivers them, and acknowledges them.
//
// A backend may keep its outbox off (recording nothing) unless configured;
// then ClaimEvents returns ErrOutboxOff, so a consumer fails loudly instead
// of waiting forever. queue/queuetest.RunOutbox checks implementations.
//
// Claims work like job leases: ClaimEvents hands an event to one caller
// until its claim expires; AckEvent and RetryEvent are fenced by the claim
// token (ErrLeaseLost otherwise). A claimer that crashes loses nothing: its
// claims expire and another consumer claims the events again, so delivery
// is at least once.
type Outbox interface {
	// ClaimEvents claims up to max events that are due (new, retried
	// events whose delay has passed, or events whose claim expired), in
	// one atomic step, oldest due first. Each gets a fresh token and is
	// hidden from other claimers until now + leaseFor. It returns no
	// events (and no error) when none is due.
	ClaimEvents(ctx context.Context, max int, leaseFor time.Duration) ([]ClaimedEvent, error)

	// AckEvent removes a delivered event from the outbox. Fenced by the
	// claim token: ErrLeaseLost when the token no longer holds the event
	// (its claim expired and another caller claimed it, or it is gone).
	AckEvent(ctx context.Context, id, token string) error

	// RetryEvent ends the claim and makes the event due again at now +
	// after. Fenced like AckEvent.
	RetryEvent(ctx context.Context, id, token string, after time.Duration) error

	// RecordDelivery appends d to the delivery log and, in the same
	// step, adds one attempt to the event's progress for d.Subscription,
	// marking it finished when d.Outcome is final. It is not fenced: an
	// attempt that happened is recorded even when its claim was lost. The
	// progress of an event that is gone is not kept. The backend sets d.At
	// to its own now.
	RecordDelivery(ctx context.Context, d Delivery) error

	// Deliveries returns one page of the delivery log matching f, newest
	// first, at most f.Limit (default 100, at most 1000).
	Deliveries(ctx context.Context, f DeliveryFilter) (*DeliveryPage, error)

	// PruneDeliveries deletes log entries recorded at or before now
	// minus olderThan, oldest first, at most limit (default 1000) per
	// call, and returns how many it deleted.
	PruneDeliveries(ctx context.Context, olderThan time.Duration, limit int) (int, error)
}

// ClaimedEvent is an event handed to one claimer.
type ClaimedEvent struct {
	Event queuetype.Event
	// Token fences AckEvent and RetryEvent for this claim.
	Token string
	// Progress is what RecordDelivery recorded so far, by subscription
	// name: how many attempts, and whether delivery to it is finished.
	Progress map[string]Progress
}

// Progress is the delivery of one event to one subscription so far.
type Progress struct {
	// Attempts is how many attempts were recorded.
	Attempts int `json:"attempts"`
	// Final is true once an attempt ended with a final outcome.
	Final bool `json:"final,omitempty"`
}

// DeliveryOutcome is how one delivery attempt ended.
type DeliveryOutcome string

// Delivery outcomes.
const (
	// DeliveryOK: the receiver answered 2xx. Final.
	DeliveryOK DeliveryOutcome = "delivered"
	// DeliveryRetry: the attempt failed and another one is scheduled.
	DeliveryRetry DeliveryOutcome = "retry"
	// DeliveryFailed: the attempt failed and it was the last one. Final.
	DeliveryFailed DeliveryOutcome = "failed"
	// DeliveryGone: the receiver answered 410 Gone; no more attempts.
	// Final.
	DeliveryGone DeliveryOutcome = "gone"
	// DeliveryRefused: the request was never sent, because the address
	// is refused (the SSRF guard) or the URL is unusable. Final.
	DeliveryRefused DeliveryOutcome = "refused"
)

// Final reports whether o ends delivery of an event to a subscription.
func (o DeliveryOutcome) Final() bool { return o != DeliveryRetry }

// Delivery is one attempt to deliver an event to a subscription: an entry
// in the delivery log.
type Delivery struct {
	// Seq orders the log; set by the backend, unique within it.
	Seq int64 `json:"seq"`
	// EventID, EventType, JobID and Group identify the event.
	EventID   string              `json:"event_id"`
	EventType queuetype.EventType `json:"event_type"`
	JobID     string              `json:"job_id,omitempty"`
	Group     string              `json:"group,omitempty"`
	// Subscription names the subscription; URL is where it was sent.
	Subscription string `json:"subscription"`
	URL          string `json:"url"`
	// Attempt counts this subscription's attempts for the event, from 1.
	Attempt int `json:"attempt"`
	// At is when the attempt was recorded (the backend's clock).
	At time.Time `json:"at"`
	// Status is the HTTP status code; 0 when there was no response.
	Status int `json:"status"`
	// Latency is how long the request took, response included.
	Latency time.Duration `json:"latency_ns"`
	// Error says why the attempt failed; empty on success.
	Error string `json:"error,omitempty"`
	// Outcome is how the attempt ended.
	Outcome DeliveryOutcome `json:"outcome"`
}

// DeliveryFilter selects log entries for Outbox.Deliveries. Zero fields do
// not filter.
type DeliveryFilter struct {
	JobID        string
	Subscription string
	EventID      string
	// Limit is the page size: default 100, at most 1000.
	Limit int
	// Cursor continues from a previous DeliveryPage.Next.
	Cursor string
}

// DeliveryPage is one page of the delivery log.
type DeliveryPage struct {
	Deliveries []Delivery
	// Next is the cursor of the next (older) page; empty on the last.
	Next string
}
