package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// DeliveryKind is the Kind of the delivery jobs Forward enqueues and
// Handler runs.
const DeliveryKind = "webhook.deliver"

// DefaultForwardBatch bounds how many events Forward claims at once.
const DefaultForwardBatch = 100

// deliveryJob is a delivery job's payload: one event for one subscription.
type deliveryJob struct {
	Event        queue.Event `json:"event"`
	Subscription string      `json:"subscription"`
	// Before is how many attempts to this subscription the outbox had
	// recorded when the event was forwarded.
	Before int `json:"before,omitempty"`
	// Hook is set for a webhook given with the job or its group
	// (Subscription is then JobHookName or GroupHookName).
	Hook *laneHook `json:"hook,omitempty"`
}

// laneHook is a per-job or per-group webhook's delivery as a delivery job
// carries it. The secret is not in it: Handler looks it up by tenant when
// it sends, so no secret sits in a queue.
type laneHook struct {
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    json.RawMessage   `json:"body"`
	Tenant  string            `json:"tenant,omitempty"`
	Trace   string            `json:"trace,omitempty"`
}

// ForwardOnce claims up to DefaultForwardBatch due events, enqueues their
// delivery jobs to queue q through c, and then acknowledges each event in
// the outbox. When the enqueue fails, the events are released to be
// claimed again after Backoff(1): a job stored before the failure (a
// batch on a broker is not atomic) may then be enqueued twice, so delivery
// stays at least once. It returns how many events it claimed.
func (d *Dispatcher) ForwardOnce(ctx context.Context, c *queue.Client, q string) (int, error) {
	cs, err := d.ob.ClaimEvents(ctx, DefaultForwardBatch, d.cfg.LeaseFor)
	if err != nil {
		return 0, d.claimError(err)
	}
	var specs []queue.JobSpec
	for _, ce := range cs {
		if ce.Event.Kind == DeliveryKind {
			// A delivery job's own event (its queue is on a backend
			// with an outbox): forwarding it would feed on itself.
			continue
		}
		djs, err := d.deliveryJobs(ctx, ce)
		if err != nil {
			for _, ce := range cs {
				d.settle(ctx, ce, d.cfg.Backoff(1, err))
			}
			return len(cs), err
		}
		for _, dj := range djs {
			payload, err := json.Marshal(dj)
			if err != nil {
				return len(cs), fmt.Errorf("webhook: encoding a delivery job: %w", err)
			}
			specs = append(specs, queue.JobSpec{
				Queue: q, Kind: DeliveryKind, Payload: payload,
				MaxAttempts: max(d.cfg.MaxAttempts-dj.Before, 1),
			})
		}
	}
	if len(specs) > 0 {
		if _, err := c.EnqueueBatch(ctx, specs); err != nil {
			for _, ce := range cs {
				d.settle(ctx, ce, d.cfg.Backoff(1, err))
			}
			return len(cs), fmt.Errorf("webhook: enqueueing delivery jobs: %w", err)
		}
	}
	for _, ce := range cs {
		d.settle(ctx, ce, -1)
	}
	return len(cs), nil
}

// Forward moves events from the outbox onto queue q until ctx ends (see
// ForwardOnce), looking again at once while batches come full and after
// PollInterval otherwise, and prunes the delivery log once an hour. Faults
// are logged and retried; it returns an error only when the backend's
// outbox is off or the dispatcher is already running.
func (d *Dispatcher) Forward(ctx context.Context, c *queue.Client, q string) error {
	if !d.running.CompareAndSwap(false, true) {
		return errors.New("webhook: dispatcher is already running")
	}
	defer d.running.Store(false)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var bg sync.WaitGroup
	defer bg.Wait()
	bg.Add(1)
	go func() { defer bg.Done(); d.prune(ctx) }()
	for ctx.Err() == nil {
		n, err := d.ForwardOnce(ctx, c, q)
		if errors.Is(err, queue.ErrOutboxOff) {
			return err
		}
		if err != nil && ctx.Err() == nil {
			d.cfg.Logger.Error("webhook: forwarding events failed", "dispatcher", d.cfg.ID, "err", err)
		}
		if err == nil && n == DefaultForwardBatch {
			continue
		}
		t := d.cfg.Clock.NewTimer(d.cfg.PollInterval)
		select {
		case <-ctx.Done():
		case <-t.C():
		}
		t.Stop()
	}
	return nil
}

// retryError is a failed attempt that is to be retried after next.
type retryError struct {
	subscription string
	attempt      int
	next         time.Duration
}

func (e *retryError) Error() string {
	return fmt.Sprintf("webhook: delivery to %s failed (attempt %d); see the delivery log", e.subscription, e.attempt)
}

// Backoff is the queue worker's backoff for delivery jobs (WorkerConfig.
// Backoff): the wait Handler's attempt asked for (Config.Backoff, or a
// longer Retry-After), else Config.Backoff.
func (d *Dispatcher) Backoff(attempt int, err error) time.Duration {
	var re *retryError
	if errors.As(err, &re) {
		return re.next
	}
	return d.cfg.Backoff(attempt, err)
}

// Handler returns the handler of delivery jobs (Kind DeliveryKind): one
// attempt to deliver the job's event to its subscription, recorded in the
// delivery log. It returns nil when delivered, or when there is nothing to
// do (the subscription is gone from the config or disabled after a 410); a
// queue.Permanent error when delivery is given up (the last attempt, 410
// Gone, a refused address); otherwise an error the worker retries after
// Backoff. Run the worker with Backoff, and a lease longer than
// Config.Timeout.
func (d *Dispatcher) Handler() queue.Handler {
	return queue.HandlerFunc(func(ctx context.Context, j *queue.Job) ([]byte, error) {
		var dj deliveryJob
		if err := json.Unmarshal(j.Payload, &dj); err != nil {
			return nil, queue.Permanent(fmt.Errorf("webhook: bad delivery job payload: %w", err))
		}
		s, body, ok, err := d.laneTarget(ctx, dj)
		if err != nil {
			return nil, err // the tenant's secret could not be read: retried
		}
		if !ok {
			return nil, nil
		}
		ce := backend.ClaimedEvent{Event: dj.Event, Progress: map[string]backend.Progress{s.Name: {Attempts: dj.Before + j.Attempt - 1}}}
		if d.tracer != nil && dj.Hook != nil && dj.Hook.Trace != "" {
			ctx = extractTrace(ctx, dj.Hook.Trace)
		}
		r := d.send(ctx, ce, s, body)
		attempt := dj.Before + j.Attempt
		switch {
		case r.final && r.ok:
			return nil, nil
		case r.final:
			return nil, queue.Permanent(fmt.Errorf("webhook: delivery to %s given up after attempt %d; see the delivery log", s.Name, attempt))
		}
		return nil, &retryError{subscription: s.Name, attempt: attempt, next: r.next}
	})
}

// subscription returns the enabled subscription named name.
func (d *Dispatcher) subscription(name string) (Subscription, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.disabled[name] {
		return Subscription{}, false
	}
	for _, s := range d.subs {
		if s.Name == name {
			return s, true
		}
	}
	return Subscription{}, false
}

// deliveryJobs returns the delivery jobs of one claimed event: one per
// subscription and per job or group webhook still waiting for it.
func (d *Dispatcher) deliveryJobs(ctx context.Context, ce backend.ClaimedEvent) ([]deliveryJob, error) {
	var out []deliveryJob
	for _, s := range d.targets(ce) {
		out = append(out, deliveryJob{Event: ce.Event, Subscription: s.Name, Before: ce.Progress[s.Name].Attempts})
	}
	hooks, err := d.hookTargets(ctx, ce)
	if err != nil {
		return nil, err
	}
	for _, t := range hooks {
		out = append(out, deliveryJob{
			Event: ce.Event, Subscription: t.sub.Name, Before: ce.Progress[t.sub.Name].Attempts,
			Hook: &laneHook{URL: t.sub.URL, Headers: t.sub.Headers, Body: t.body, Tenant: t.tenant, Trace: t.trace},
		})
	}
	return out, nil
}

// laneTarget returns the receiver and body of a delivery job; ok is false
// when there is nothing to do (a subscription gone from the config or
// disabled after a 410).
func (d *Dispatcher) laneTarget(ctx context.Context, dj deliveryJob) (Subscription, []byte, bool, error) {
	if h := dj.Hook; h != nil {
		if d.cfg.Jobs == nil {
			return Subscription{}, nil, false, nil
		}
		secret, err := d.secretFor(ctx, h.Tenant)
		if err != nil {
			return Subscription{}, nil, false, err
		}
		return Subscription{Name: dj.Subscription, URL: h.URL, Secret: secret, Headers: h.Headers}, h.Body, true, nil
	}
	s, ok := d.subscription(dj.Subscription)
	if !ok {
		return Subscription{}, nil, false, nil
	}
	body, err := json.Marshal(dj.Event)
	if err != nil {
		return Subscription{}, nil, false, queue.Permanent(err)
	}
	return s, body, true, nil
}
