// Package httplimit is the web layer of rate limits: net/http middleware,
// client-IP resolution behind trusted proxies, and the IETF RateLimit and
// RateLimit-Policy header fields.
//
// ByIP limits each client address, like a login or captcha endpoint needs.
// Middleware applies any *ratelimit.Limiter[*http.Request], so a limit can
// be keyed by an API key, a tenant or a route. Both answer:
//
//   - allowed: the handler runs, with RateLimit and RateLimit-Policy set;
//   - over a limit: 429 with Retry-After (whole seconds, rounded up) and an
//     application/problem+json body, unless Options.Responder says otherwise;
//   - a cost above a limit's quota (or a token bucket's burst), which no
//     wait would ever admit: 422 with an application/problem+json body
//     saying so, and no Retry-After, so a client that honours Retry-After
//     does not retry forever;
//   - store down: as the limiter's failure mode says — fail-open passes,
//     fail-closed answers 503 with Retry-After. 503 rather than 429 because
//     the client did not exceed anything: it should not think it did, and
//     an outage must stay visible as one in status-code metrics;
//   - invalid limit or subject (a programmer error): 500, logged.
//
// Fixed windows start at a client's first counted request (see package
// ratelimit/limittest), so the RateLimit reset and Retry-After count from
// there, not from a clock boundary.
package httplimit

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"

	"github.com/sluicehq/sluice/ratelimit"
)

// Scene is the scene of ByIP limiters: keys read
// rate-limit:ip:<id>:{ip:<client ip>}.
const Scene = "ip"

// IPDefinition is the definition ByIP uses: scene "ip", policy id, subject
// ("ip", ClientIP(r, opts)), one limit, cost 1, failing open. Start from it
// to change what ByIP fixes, such as the failure mode or shadow mode, then
// pass ratelimit.Define's limiter to Middleware.
func IPDefinition(id string, limit ratelimit.Limit, opts Options) ratelimit.Definition[*http.Request] {
	limits := []ratelimit.Limit{limit}
	opts.TrustedProxies = slices.Clone(opts.TrustedProxies) // later edits by the caller must not race
	return ratelimit.Definition[*http.Request]{
		Scene:   Scene,
		Policy:  func(*http.Request) string { return id },
		Subject: func(r *http.Request) []string { return []string{"ip", ClientIP(r, opts)} },
		Limits:  func(*http.Request) []ratelimit.Limit { return limits },
	}
}

// ByIP limits each client address (see ClientIP) to limit under the policy
// id: the seed's IP frequency limit. It fails open: a store outage lets
// requests through. ByIP panics when id is empty, limit is invalid, store is
// nil or opts is invalid: a configuration mistake is caught at start-up, not
// answered with a 500 on every request.
func ByIP(store ratelimit.Store, id string, limit ratelimit.Limit, opts Options) func(http.Handler) http.Handler {
	if id == "" {
		panic("httplimit: ByIP: id must not be empty")
	}
	if err := limit.Validate(); err != nil {
		panic(fmt.Sprintf("httplimit: ByIP %q: %v", id, err))
	}
	var lopts []ratelimit.Option
	if opts.Logger != nil {
		lopts = append(lopts, ratelimit.WithLogger(opts.Logger))
	}
	l, err := ratelimit.Define(store, IPDefinition(id, limit, opts), lopts...)
	if err != nil {
		panic(fmt.Sprintf("httplimit: ByIP %q: %v", id, err))
	}
	return Middleware(l, opts)
}

// Middleware counts every request against l and answers as the package
// documentation describes. When opts.Disabled is set and opts.Force is not,
// it returns handlers unchanged. It panics when l is nil or opts is invalid.
func Middleware(l *ratelimit.Limiter[*http.Request], opts Options) func(http.Handler) http.Handler {
	if l == nil {
		panic("httplimit: Middleware: limiter must not be nil")
	}
	if err := opts.Validate(); err != nil {
		panic(err.Error())
	}
	if !opts.active() {
		return func(next http.Handler) http.Handler { return next }
	}
	m := &middleware{l: l, legacy: opts.LegacyHeaders, respond: opts.responder(), log: opts.logger()}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { m.serve(w, r, next) })
	}
}

type middleware struct {
	l       *ratelimit.Limiter[*http.Request]
	legacy  bool
	respond Responder
	log     *slog.Logger
}

func (m *middleware) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	v, err := m.l.Check(r.Context(), r)
	var over *ratelimit.CostExceedsQuotaError
	switch {
	case errors.As(err, &over):
		m.respond(w, r, Rejection{Status: http.StatusUnprocessableEntity, Policy: v.Policy, Cost: over})
	case err != nil:
		m.log.LogAttrs(r.Context(), slog.LevelError, "httplimit: invalid rate limit, answering 500",
			slog.String("scene", m.l.Scene()), slog.String("policy", v.Policy), slog.Any("error", err))
		WriteProblem(w, Problem{Status: http.StatusInternalServerError})
	case v.Fault != nil && !v.Allowed:
		w.Header().Set(HeaderRetryAfter, RetryAfter(FaultRetryAfter))
		m.respond(w, r, Rejection{Status: http.StatusServiceUnavailable, Policy: v.Policy, Fault: v.Fault})
	case v.Shadow:
		// Shadow mode must not change what clients see, headers included.
		next.ServeHTTP(w, r)
	default:
		SetHeaders(w.Header(), v.Policy, v.Decision, m.legacy)
		if !v.Allowed {
			m.respond(w, r, Rejection{Status: http.StatusTooManyRequests, Policy: v.Policy, Decision: v.Decision})
			return
		}
		next.ServeHTTP(w, r)
	}
}
