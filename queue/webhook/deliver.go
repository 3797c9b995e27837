package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// maxRetryAfter caps how long a receiver's Retry-After may delay the next
// attempt.
const maxRetryAfter = time.Hour

// settleTimeout bounds the backend calls that settle an event, which run
// even when the dispatcher is stopping.
const settleTimeout = 10 * time.Second

// sendResult is how one subscription's attempt ended, for settling its
// event.
type sendResult struct {
	final bool          // no more attempts for this subscription
	ok    bool          // final because delivered
	next  time.Duration // wait before the next attempt, when not final
}

// handle delivers one claimed event to the subscriptions waiting for it,
// in parallel, then acknowledges it or releases it for its next attempt.
// The round is cut off at half the claim, so it never outlives the claim.
func (d *Dispatcher) handle(ctx context.Context, c backend.ClaimedEvent) {
	round, cancel := context.WithTimeout(ctx, d.cfg.LeaseFor/2)
	defer cancel()
	ts, err := d.allTargets(round, c)
	if err != nil {
		d.cfg.Logger.Error("webhook: preparing an event's deliveries failed; it will be tried again",
			"event", c.Event.ID, "err", err)
		d.settle(ctx, c, d.cfg.Backoff(1, err))
		return
	}
	if len(ts) == 0 {
		d.settle(ctx, c, -1)
		return
	}
	res, err := flow.Map(round, ts, func(ctx context.Context, t target) (sendResult, error) {
		if d.tracer != nil && t.trace != "" {
			ctx = extractTrace(ctx, t.trace)
		}
		return d.send(ctx, c, t.sub, t.body), nil
	}, flow.Workers(len(ts)))
	if err != nil && round.Err() == nil {
		d.cfg.Logger.Error("webhook: delivery round failed", "event", c.Event.ID, "err", err)
	}
	next := time.Duration(-1) // -1: every subscription is done
	for _, r := range res {
		if !r.final && (next < 0 || r.next < next) {
			next = r.next
		}
	}
	d.settle(ctx, c, next)
}

// allTargets returns the subscriptions c still has to go to, all with
// the event's JSON as their body, then the webhooks given with its job or
// group, each with its own.
func (d *Dispatcher) allTargets(ctx context.Context, c backend.ClaimedEvent) ([]target, error) {
	var out []target
	if subs := d.targets(c); len(subs) > 0 {
		body, err := json.Marshal(c.Event)
		if err != nil { // a queue.Event always marshals; be loud if not
			return nil, err
		}
		for _, s := range subs {
			out = append(out, target{sub: s, body: body})
		}
	}
	hooks, err := d.hookTargets(ctx, c)
	if err != nil {
		return nil, err
	}
	return append(out, hooks...), nil
}

// settle acknowledges c (next < 0) or releases it to be claimed again
// after next. A lost claim means another dispatcher has the event now.
func (d *Dispatcher) settle(ctx context.Context, c backend.ClaimedEvent, next time.Duration) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	var err error
	if next < 0 {
		err = d.ob.AckEvent(sctx, c.Event.ID, c.Token)
	} else {
		err = d.ob.RetryEvent(sctx, c.Event.ID, c.Token, next)
	}
	switch {
	case errors.Is(err, queue.ErrLeaseLost):
		d.cfg.Logger.Warn("webhook: claim expired before the event was settled; it may be sent again",
			"dispatcher", d.cfg.ID, "event", c.Event.ID)
	case err != nil:
		d.cfg.Logger.Error("webhook: settling an event failed; it will be sent again once its claim expires",
			"dispatcher", d.cfg.ID, "event", c.Event.ID, "err", err)
	}
}

// send makes one attempt to deliver c to s and records it.
func (d *Dispatcher) send(ctx context.Context, c backend.ClaimedEvent, s Subscription, body []byte) sendResult {
	n := c.Progress[s.Name].Attempts + 1
	if err := d.waitBudget(ctx, s.URL); err != nil {
		if errors.Is(context.Cause(ctx), errStopped) {
			return sendResult{} // released at once
		}
		return sendResult{next: d.cfg.Backoff(n, err)} // not sent: not an attempt
	}
	start := time.Now() // wall time: latency is a measurement, not a timer
	status, retryAfter, err := d.post(ctx, c.Event, s, body, n)
	latency := time.Since(start)
	if err != nil && errors.Is(context.Cause(ctx), errStopped) {
		return sendResult{} // cut off by shutdown: not counted, released at once
	}
	dl := backend.Delivery{
		EventID: c.Event.ID, EventType: c.Event.Type, JobID: c.Event.JobID, Group: c.Event.Group,
		Subscription: s.Name, URL: s.URL, Attempt: n, Status: status, Latency: latency,
		Outcome: d.outcome(status, err, n),
	}
	if err != nil {
		dl.Error = queue.StorableError(err.Error())
	}
	if rerr := d.ob.RecordDelivery(context.WithoutCancel(ctx), dl); rerr != nil {
		d.cfg.Logger.Error("webhook: recording a delivery failed", "event", c.Event.ID, "subscription", s.Name, "err", rerr)
	}
	if d.cfg.OnDelivery != nil {
		d.cfg.OnDelivery(dl)
	}
	if dl.Outcome == backend.DeliveryGone {
		d.disable(s)
	}
	if dl.Outcome.Final() {
		if dl.Outcome != backend.DeliveryOK {
			d.cfg.Logger.Warn("webhook: delivery given up", "event", c.Event.ID, "subscription", s.Name,
				"outcome", dl.Outcome, "attempt", n, "err", dl.Error)
		}
		return sendResult{final: true, ok: dl.Outcome == backend.DeliveryOK}
	}
	return sendResult{next: max(d.cfg.Backoff(n, err), min(retryAfter, maxRetryAfter))}
}

// outcome classifies an attempt: 2xx delivered, 410 gone, refused by the
// guard or an unusable URL refused, anything else retried until the last
// attempt.
func (d *Dispatcher) outcome(status int, err error, n int) backend.DeliveryOutcome {
	var ue *url.Error
	switch {
	case errors.Is(err, ErrRefused), err != nil && errors.As(err, &ue) && ue.Op == "parse":
		return backend.DeliveryRefused
	case err == nil && status >= 200 && status < 300:
		return backend.DeliveryOK
	case status == http.StatusGone:
		return backend.DeliveryGone
	case n >= d.cfg.MaxAttempts:
		return backend.DeliveryFailed
	}
	return backend.DeliveryRetry
}

func (d *Dispatcher) waitBudget(ctx context.Context, rawURL string) error {
	if d.cfg.HostBudget == nil {
		return nil
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil // post reports the bad URL
	}
	if b := d.cfg.HostBudget(u.Host); b != nil {
		return b.Wait(ctx, 1)
	}
	return nil
}

// post sends one signed request and returns the status, the receiver's
// Retry-After (0 when absent), and an error for a failed attempt.
func (d *Dispatcher) post(ctx context.Context, e queue.Event, s Subscription, body []byte, n int) (int, time.Duration, error) {
	ctx, end := d.startSpan(ctx, e, s, "")
	status, after, err := d.postOnce(ctx, e, s, body, n)
	end(status, err)
	return status, after, err
}

// postOnce is post without its span.
func (d *Dispatcher) postOnce(ctx context.Context, e queue.Event, s Subscription, body []byte, n int) (int, time.Duration, error) {
	actx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, s.URL, bytes.NewReader(body))
	if err != nil {
		return 0, 0, err
	}
	h := req.Header
	for k, v := range s.Headers {
		h.Set(k, v)
	}
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "Sluice-Webhook/1")
	h.Set(EventIDHeader, e.ID)
	h.Set(DeliveryIDHeader, DeliveryID(e.ID, s.Name))
	h.Set("Idempotency-Key", DeliveryID(e.ID, s.Name))
	h.Set(EventTypeHeader, string(e.Type))
	h.Set(AttemptHeader, strconv.Itoa(n))
	if s.Secret != "" {
		h.Set(SignatureHeader, Sign(s.Secret, d.cfg.Clock.Now(), body))
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	head, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
	_, _ = io.CopyN(io.Discard, resp.Body, 64<<10) // so the connection can be reused
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp.StatusCode, 0, nil
	}
	return resp.StatusCode, retryAfter(resp), fmt.Errorf("webhook: receiver answered %s%s", resp.Status, snippet(head))
}

// retryAfter reads a 429 or 503 answer's Retry-After in seconds.
func retryAfter(resp *http.Response) time.Duration {
	if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable {
		return 0
	}
	secs, err := strconv.Atoi(strings.TrimSpace(resp.Header.Get("Retry-After")))
	if err != nil || secs < 0 {
		return 0
	}
	return time.Duration(secs) * time.Second
}

// snippet quotes the start of a response body for the log, if it is text.
func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if s == "" || !utf8.ValidString(s) {
		return ""
	}
	return ": " + strconv.Quote(s)
}
