package budget

import (
	"context"
	"net/http"
	"time"
)

// DefaultLimitedPause is how long Learn closes a budget after a refusal
// (Hint.Limited) that says nothing of when to come back.
const DefaultLimitedPause = time.Second

// Close closes the budget name for the whole fleet until the time until
// (the upstream answered 429 with a Retry-After): every Admit on it is
// held until then, decided in the same store operation as its limits. A
// close never shortens an earlier, longer one. It returns when the budget
// opens.
func (b *Budgets) Close(ctx context.Context, name string, until time.Time) (time.Time, error) {
	if _, err := b.lookup([]string{name}); err != nil {
		return time.Time{}, err
	}
	return b.store.CloseUntil(ctx, gateKey(name), until)
}

// Learn applies what an upstream said to the budget name: it closes the
// budget until h.Until() when that is later than now (a Retry-After, or a
// unit with nothing remaining until its reset), and for
// DefaultLimitedPause when h is a refusal that says nothing of when to
// come back. A refusal also slows an adaptive budget (see Adaptive). It
// reports when the budget opens (zero when Learn closed nothing).
func (b *Budgets) Learn(ctx context.Context, name string, h Hint) (time.Time, error) {
	if h.Limited {
		if _, err := b.Adapt(name, true); err != nil {
			return time.Time{}, err
		}
	}
	now := b.clock.Now()
	until := h.Until()
	if h.Limited && !until.After(now) {
		until = now.Add(DefaultLimitedPause)
	}
	if !until.After(now) {
		if _, err := b.lookup([]string{name}); err != nil {
			return time.Time{}, err
		}
		return time.Time{}, nil
	}
	return b.Close(ctx, name, until)
}

// TransportOptions configures Transport.
type TransportOptions struct {
	// Budget picks the budget a request spends; "" means none (the
	// response is not read). Required.
	Budget func(*http.Request) string
	// OnError, when set, receives errors from learning (a store fault, an
	// unknown budget); the response is returned regardless.
	OnError func(*http.Request, error)
}

// Transport returns a RoundTripper that sends each request through base
// (http.DefaultTransport when nil) and learns from every response
// (FromResponse, then Learn on the request's budget), so that one 429
// closes the budget for every caller in the fleet until the upstream's
// reset; a 2xx response counts as a success for an adaptive budget. Put it inside flow.Transport, so that each retry's response is
// learned from too:
//
//	client := &http.Client{Transport: flow.Transport(budget.Transport(nil, b, opts), flow.WithRetry(p))}
//
// It does not admit requests: admission belongs to the work that makes
// them (Admit before the job starts).
func Transport(base http.RoundTripper, b *Budgets, opts TransportOptions) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &learner{base: base, b: b, opts: opts}
}

type learner struct {
	base http.RoundTripper
	b    *Budgets
	opts TransportOptions
}

func (l *learner) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := l.base.RoundTrip(req)
	if err != nil || l.opts.Budget == nil {
		return resp, err
	}
	name := l.opts.Budget(req)
	if name == "" {
		return resp, nil
	}
	h := FromResponse(resp, l.b.clock.Now())
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		// A success lets an adaptive budget speed up again.
		if _, aerr := l.b.Adapt(name, false); aerr != nil && l.opts.OnError != nil {
			l.opts.OnError(req, aerr)
		}
	}
	if h.IsZero() {
		return resp, nil
	}
	if _, lerr := l.b.Learn(req.Context(), name, h); lerr != nil && l.opts.OnError != nil {
		l.opts.OnError(req, lerr)
	}
	return resp, nil
}
