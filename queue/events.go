package queue

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"

	"github.com/sluicehq/sluice/queue/queuetype"
)

// The event types only the event log records (EventLog); the outbox
// records the final ones (EventTypes).
const (
	// EventJobEnqueued: a job was stored (not for a duplicate).
	EventJobEnqueued EventType = "job.enqueued"
	// EventJobStarted: a worker leased the job and an attempt began.
	EventJobStarted EventType = "job.started"
	// EventJobProgress: the running job reported progress; Data holds
	// it as JobProgress's JSON.
	EventJobProgress EventType = "job.progress"
)

// LogEventTypes lists every event type the event log records.
var LogEventTypes = []EventType{
	EventJobEnqueued, EventJobStarted, EventJobProgress,
	EventJobCompleted, EventJobFailed, EventJobCancelled, EventGroupCompleted,
}

// EventFilter selects events for Client.Subscribe. Zero fields do not
// filter; the fields that are set must all match.
type EventFilter struct {
	// Queue, Tenant, Group and Kind must equal the job's (for a group
	// event: its Group and Tenant).
	Queue, Tenant, Group, Kind string
	// JobID limits the stream to one job's events.
	JobID string
	// Types limits the stream to these event types.
	Types []EventType
	// After resumes the stream after the event with this id (an
	// Event.ID already seen): what was recorded since and is still
	// retained comes first. Empty starts with events recorded from now.
	After string
	// Buffer is how many events may wait for a slow reader before the
	// subscription is cut off with ErrSlowSubscriber; default 1024.
	Buffer int
}

// Match reports whether e passes f (After and Buffer aside).
func (f EventFilter) Match(e Event) bool {
	eq := func(want, got string) bool { return want == "" || want == got }
	return eq(f.Queue, e.Queue) && eq(f.Tenant, e.Tenant) && eq(f.Group, e.Group) &&
		eq(f.Kind, e.Kind) && eq(f.JobID, e.JobID) && (len(f.Types) == 0 || slices.Contains(f.Types, e.Type))
}

// Validate returns an *InvalidArgumentError naming the first field of f
// that breaks a rule: names as in JobSpec, known event types, a
// non-negative buffer.
func (f EventFilter) Validate() error {
	for _, n := range []struct{ name, v string }{
		{"Queue", f.Queue}, {"Tenant", f.Tenant}, {"Group", f.Group}, {"Kind", f.Kind}, {"JobID", f.JobID},
	} {
		if err := queuetype.ValidName(Field("EventFilter", n.name), n.v, false); err != nil {
			return err
		}
	}
	for _, t := range f.Types {
		if !slices.Contains(LogEventTypes, t) {
			return queuetype.InvalidArgument(Field("EventFilter", "Types"), "has unknown event type %q", t)
		}
	}
	if f.Buffer < 0 {
		return queuetype.InvalidArgument(Field("EventFilter", "Buffer"), "must not be negative, got %d", f.Buffer)
	}
	return nil
}

// DefaultEventBuffer is EventFilter.Buffer's default.
const DefaultEventBuffer = 1024

// ErrEventLogOff means the backend can keep an event log but was opened
// with it off.
var ErrEventLogOff = errors.New("queue: the backend's event log is off")

// ErrSlowSubscriber ends a subscription whose reader fell more than its
// buffer behind: it is cut off rather than left to grow memory. Resume
// with EventFilter.After set to the last event read.
var ErrSlowSubscriber = errors.New("queue: subscriber too slow: events were not read fast enough")

// ErrEventsGap reports that a subscription resumed after an event older
// than the log's retention: some events were pruned before it read them.
// The subscription goes on with the oldest retained; Subscription.Gap
// says so.
var ErrEventsGap = errors.New("queue: events after the given id were pruned")

// Subscription is a stream of events from Client.Subscribe.
type Subscription struct {
	ch     chan Event
	done   chan struct{}
	cancel context.CancelFunc
	err    error // set before ch is closed
	gap    atomic.Bool
}

// Events returns the stream. It is closed when the subscription ends;
// Err then says why.
func (s *Subscription) Events() <-chan Event { return s.ch }

// Err returns why the stream ended: the context's error, ErrSlowSubscriber,
// or a store fault; nil while it runs.
func (s *Subscription) Err() error {
	select {
	case <-s.done:
		return s.err
	default:
		return nil
	}
}

// Gap reports whether the subscription resumed after an event older than
// the log's retention, so events between were missed.
func (s *Subscription) Gap() bool { return s.gap.Load() }

// Close ends the subscription and waits until its stream is closed.
func (s *Subscription) Close() {
	s.cancel()
	<-s.done
}

// Subscribe streams the events matching f, on a backend that keeps an
// event log (Features.Events; otherwise an error matching ErrUnsupported).
// With f.After set, events recorded after that one and still retained come
// first, then live ones, with none lost or repeated; the stream follows
// the log's order. Live events reach every subscription of the client
// through one reader of the log, not one per subscription. A subscription
// ends when ctx ends, on Close, on a store fault, or when its reader falls
// f.Buffer events behind (ErrSlowSubscriber).
func (c *Client) Subscribe(ctx context.Context, f EventFilter) (*Subscription, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	log := c.b.Features().Events
	if log == nil {
		return nil, &UnsupportedError{Backend: c.b.Features().Name, Feature: CapEvents}
	}
	if f.Buffer == 0 {
		f.Buffer = DefaultEventBuffer
	}
	return c.hub.get(c).subscribe(ctx, f)
}
