package flow

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/clock"
)

// TransportOption configures a Transport.
type TransportOption func(*transport)

// WithBudget makes every attempt, retries included, wait for one call from
// b first.
func WithBudget(b Limiter) TransportOption { return func(t *transport) { t.budget = b } }

// WithHostBudgets makes every attempt also wait for one call from the
// budget that budgetFor returns for the request's host (URL.Host, port
// included); nil means no per-host budget for that host. HostBudgets.For
// is such a function.
func WithHostBudgets(budgetFor func(host string) Limiter) TransportOption {
	return func(t *transport) { t.hostBudget = budgetFor }
}

// WithRetry sets the retry policy (default: the zero Policy, 3 attempts
// with backoff from 1s). Its Budget and Retryable fields are ignored: use
// WithBudget, and WithClassifier to change what is retried.
func WithRetry(p Policy) TransportOption { return func(t *transport) { t.policy = p } }

// WithClassifier replaces Classify, the rule that decides which responses
// and errors are retried.
func WithClassifier(fn func(*http.Response, error) Class) TransportOption {
	return func(t *transport) { t.classify = fn }
}

// Class is how Transport treats an attempt's outcome.
type Class uint8

const (
	// Done: return the response (or error) to the caller as it is.
	Done Class = iota
	// Transient: retry, after the response's Retry-After if it has one.
	Transient
	// Fatal: return the error at once; it will not get better. For a
	// response it is the same as Done.
	Fatal
)

// Classify is Transport's default rule:
//   - 429 Too Many Requests, 502, 503 and 504 responses are Transient
//     (with their Retry-After honoured); every other response is Done,
//     including other 4xx (the caller sees them as they are);
//   - certificate errors and unknown hosts are Fatal: the next attempt
//     would fail the same way;
//   - timeouts, refused or reset connections and unexpected EOFs are
//     Transient;
//   - any other error is Fatal.
func Classify(resp *http.Response, err error) Class {
	if err == nil {
		switch resp.StatusCode {
		case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return Transient
		}
		return Done
	}
	var dns *net.DNSError
	if isCertificateError(err) || (errors.As(err, &dns) && dns.IsNotFound) {
		return Fatal
	}
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout(),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ECONNABORTED), errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return Transient
	}
	var op *net.OpError
	if errors.As(err, &op) {
		return Transient
	}
	return Fatal
}

func isCertificateError(err error) bool {
	var (
		verify   *tls.CertificateVerificationError
		unknown  x509.UnknownAuthorityError
		invalid  x509.CertificateInvalidError
		hostname x509.HostnameError
	)
	return errors.As(err, &verify) || errors.As(err, &unknown) ||
		errors.As(err, &invalid) || errors.As(err, &hostname)
}

// Transport returns a RoundTripper that sends each request through base
// (http.DefaultTransport when nil) with a budget, retries and
// classification (see Classify and the options).
//
// Each attempt first waits for the budget (WithBudget) and the host's
// budget (WithHostBudgets), so retries cost budget. Transient failures are
// retried under the policy (WithRetry); a response's Retry-After (seconds or
// an HTTP date) replaces the backoff. When attempts run out, the last
// response is returned as it is, so the caller sees the final 429 or 503;
// the last error is returned for a failed connection. Request bodies are
// replayed with GetBody (set by http.NewRequest for in-memory bodies); a
// request with a body but no GetBody is sent once. The request's context
// ends waits and sleeps.
//
// Retries make delivery at least once: a request that timed out may have
// reached the server. Send an idempotency key with non-idempotent requests.
func Transport(base http.RoundTripper, opts ...TransportOption) http.RoundTripper {
	t := &transport{base: base, classify: Classify}
	for _, opt := range opts {
		opt(t)
	}
	if t.base == nil {
		t.base = http.DefaultTransport
	}
	t.policy.Budget, t.policy.Retryable = nil, nil
	t.clock = clock.Or(t.policy.Clock)
	return t
}

type transport struct {
	base       http.RoundTripper
	budget     Limiter
	hostBudget func(host string) Limiter
	policy     Policy
	classify   func(*http.Response, error) Class
	clock      clock.Clock
}

// retryResponse carries a retryable response through RetryValue, so that
// the last one can be handed to the caller when attempts run out.
type retryResponse struct {
	resp  *http.Response
	after time.Duration
}

func (e *retryResponse) Error() string {
	return "flow: upstream answered " + e.resp.Status
}

func (e *retryResponse) RetryAfter() time.Duration { return e.after }

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	p := t.policy
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		p.Attempts = 1 // the body cannot be sent twice
	}
	var last *retryResponse
	attempt := 0
	discard := func() {
		if last != nil {
			drain(last.resp)
			last = nil
		}
	}
	resp, err := RetryValue(req.Context(), p, func(ctx context.Context) (*http.Response, error) {
		attempt++
		resp, err := t.attempt(ctx, req, attempt, discard)
		if rr, ok := err.(*retryResponse); ok {
			last = rr
		}
		return resp, err
	})
	if err == nil {
		return resp, nil
	}
	// Out of attempts, or the server's Retry-After is beyond the deadline:
	// the caller gets the server's last word. A cancelled request gets the
	// error.
	if last != nil && req.Context().Err() == nil {
		return last.resp, nil
	}
	if last != nil {
		drain(last.resp)
	}
	return nil, err
}

// attempt sends one try: budgets first, then a fresh copy of the request.
// Its error is a *retryResponse or a plain error to retry, or Permanent.
// discard drops the previous attempt's response once this attempt is sure
// to be sent; until then it stays the answer to give the caller.
func (t *transport) attempt(ctx context.Context, req *http.Request, n int, discard func()) (*http.Response, error) {
	if err := t.wait(ctx, req.URL.Host); err != nil {
		if n == 1 && req.Body != nil {
			_ = req.Body.Close() // a RoundTripper always closes the body
		}
		return nil, Permanent(err)
	}
	discard()
	r, err := rewind(req, n)
	if err != nil {
		return nil, Permanent(err)
	}
	resp, err := t.base.RoundTrip(r)
	if t.classify(resp, err) != Transient {
		return resp, Permanent(err)
	}
	if err != nil {
		return nil, err
	}
	buffer(resp)
	return nil, &retryResponse{resp: resp, after: parseRetryAfter(resp.Header.Get("Retry-After"), t.clock.Now())}
}

// maxBuffered is how much of a retryable response's body is read into
// memory.
const maxBuffered = 64 << 10

// buffer reads a retryable response's body into memory and closes it, so
// the connection is free while Retry sleeps, yet the caller can still read
// the body if this response turns out to be the last. A body longer than
// maxBuffered keeps streaming after the buffered part.
func buffer(resp *http.Response) {
	buf, err := io.ReadAll(io.LimitReader(resp.Body, maxBuffered+1))
	if err == nil && len(buf) <= maxBuffered {
		_ = resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(buf))
		return
	}
	resp.Body = readCloser{io.MultiReader(bytes.NewReader(buf), resp.Body), resp.Body}
}

type readCloser struct {
	io.Reader
	io.Closer
}

func (t *transport) wait(ctx context.Context, host string) error {
	if t.budget != nil {
		if err := t.budget.Wait(ctx, 1); err != nil {
			return err
		}
	}
	if t.hostBudget != nil {
		if b := t.hostBudget(host); b != nil {
			return b.Wait(ctx, 1)
		}
	}
	return nil
}

// rewind returns the request for attempt n: the original for the first,
// a clone with a fresh body from GetBody for the others.
func rewind(req *http.Request, n int) (*http.Request, error) {
	if n == 1 {
		return req, nil
	}
	r := req.Clone(req.Context())
	if req.GetBody != nil {
		body, err := req.GetBody()
		if err != nil {
			return nil, fmt.Errorf("flow: replaying the request body: %w", err)
		}
		r.Body = body
	}
	return r, nil
}

// drain reads what is left of a discarded response (up to 64KiB) so the
// connection can be reused, then closes it.
func drain(resp *http.Response) {
	if resp == nil || resp.Body == nil {
		return
	}
	_, _ = io.CopyN(io.Discard, resp.Body, 64<<10)
	_ = resp.Body.Close()
}

// parseRetryAfter reads a Retry-After header: delay seconds or an HTTP
// date (relative to now). It returns 0 when the header is missing or
// unreadable.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if secs, err := strconv.Atoi(v); err == nil {
		if secs < 0 {
			return 0
		}
		return time.Duration(secs) * time.Second
	}
	at, err := http.ParseTime(v)
	if err != nil {
		return 0
	}
	return max(at.Sub(now), 0)
}

// HostBudgets hands out one Budget per host, made on first use, all of the
// same calls per period. It is safe for concurrent use.
type HostBudgets struct {
	calls   int
	per     time.Duration
	opts    []BudgetOption
	mu      sync.Mutex
	budgets map[string]*Budget
}

// NewHostBudgets returns per-host budgets of calls per period; calls and per
// must be positive.
func NewHostBudgets(calls int, per time.Duration, opts ...BudgetOption) (*HostBudgets, error) {
	if err := validateBudget(calls, per); err != nil {
		return nil, err
	}
	return &HostBudgets{calls: calls, per: per, opts: opts, budgets: map[string]*Budget{}}, nil
}

// For returns host's budget, making it on first use.
func (h *HostBudgets) For(host string) Limiter {
	h.mu.Lock()
	defer h.mu.Unlock()
	b, ok := h.budgets[host]
	if !ok {
		b, _ = NewBudget(h.calls, h.per, h.opts...) // arguments checked by NewHostBudgets
		h.budgets[host] = b
	}
	return b
}
