package server

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/ratelimit/httplimit"
)

// maxWaitMS bounds wait_ms: a request held longer than this would outlive
// most proxies' timeouts.
const maxWaitMS = 60_000

// options checks the body fields beyond subject and cost.
func (in *limitInput) options(req limitRequest, peek bool) *problem {
	if req.WaitMS != nil {
		if *req.WaitMS < 0 || *req.WaitMS > maxWaitMS {
			return badRequest("wait_ms must be between 0 and %d, got %d", maxWaitMS, *req.WaitMS)
		}
		in.waitMS = *req.WaitMS
	}
	if (in.waitMS > 0 || req.AtMost) && peek {
		return badRequest("wait_ms and at_most cannot be used with peek")
	}
	if in.waitMS > 0 && req.AtMost {
		return badRequest("wait_ms must not be set together with at_most")
	}
	in.atMost, in.leaseID = req.AtMost, req.LeaseID
	return nil
}

// handleLimitMore answers a decision with wait_ms or at_most.
func (s *Server) handleLimitMore(w http.ResponseWriter, r *http.Request, sc *scene, pol *policy, in limitInput) {
	if in.waitMS > 0 {
		wt, err := pol.limiter.WaitFor(r.Context(), in, time.Duration(in.waitMS)*time.Millisecond)
		if err != nil {
			if r.Context().Err() != nil {
				return // the client went away; its reservation was given back
			}
			writeLimitError(w, sc, pol, err)
			return
		}
		s.writeVerdictBody(w, sc, pol, in.cost, wt.Verdict, func(b *decisionBody) { b.WaitedMS = wt.Waited.Milliseconds() })
		return
	}
	p, err := pol.limiter.AllowAtMost(r.Context(), in)
	v := ratelimit.Verdict{Allowed: err == nil && p.Decision.Allowed, Policy: pol.name, Decision: p.Decision, Shadow: pol.shadow}
	switch {
	case errors.Is(err, ratelimit.ErrInvalidArgument):
		writeLimitError(w, sc, pol, err)
		return
	case err != nil: // a store fault: the failure mode answers
		v.Fault, v.Allowed = err, pol.mode == ratelimit.FailOpen
		if v.Allowed {
			p.Granted = in.cost
		}
	case !v.Allowed && pol.shadow:
		v.Allowed = true
	}
	s.writeVerdictBody(w, sc, pol, in.cost, v, func(b *decisionBody) { b.Granted = &p.Granted })
}

// limitLeaseBody is a lease in JSON.
type limitLeaseBody struct {
	ID    string `json:"id"`
	TTLMS int64  `json:"ttl_ms"`
}

// inFlightBody is an in-flight limit and its holders in JSON.
type inFlightBody struct {
	Max   int64 `json:"max"`
	TTLMS int64 `json:"ttl_ms"`
	Held  int64 `json:"held"`
}

// acquireBody is the answer of POST .../acquire.
type acquireBody struct {
	Allowed      bool            `json:"allowed"`
	Scene        string          `json:"scene"`
	Policy       string          `json:"policy"`
	Lease        *limitLeaseBody `json:"lease,omitempty"`
	InFlight     inFlightBody    `json:"in_flight"`
	FailureMode  string          `json:"failure_mode,omitempty"`
	RetryAfterMS int64           `json:"retry_after_ms"`
	Limits       []limitResult   `json:"limits"`
}

func (s *Server) handleAcquire(w http.ResponseWriter, r *http.Request) {
	sc, pol, in, prob := s.state.Load().limitInput(r, false)
	if prob != nil {
		writeProblem(w, prob, nil)
		return
	}
	a, err := pol.limiter.Acquire(r.Context(), in)
	_, inFlight, _, _ := pol.limiter.Limits(r.Context(), in)
	body := acquireBody{Allowed: a.Allowed, Scene: sc.name, Policy: pol.name, Limits: results(a.Decision),
		InFlight:     inFlightBody{Max: inFlight.Max, TTLMS: inFlight.TTL.Milliseconds(), Held: a.Held},
		RetryAfterMS: a.RetryAfter.Milliseconds()}
	switch {
	case errors.Is(err, ratelimit.ErrInvalidArgument):
		writeLimitError(w, sc, pol, err)
		return
	case err != nil:
		body.FailureMode = pol.mode.String()
		if pol.mode == ratelimit.FailClosed {
			w.Header().Set("Retry-After", httplimit.RetryAfter(httplimit.FaultRetryAfter))
			writeProblem(w, &problem{Status: http.StatusServiceUnavailable, Detail: fmt.Sprintf("rate-limit store unavailable and scene %q fails closed: retry later", sc.name)}, nil)
			return
		}
		body.Allowed = true // fail open: no lease to release
	}
	if a.Allowed && a.Lease.ID != "" {
		body.Lease = &limitLeaseBody{ID: a.Lease.ID, TTLMS: a.Lease.TTL.Milliseconds()}
	}
	if body.Allowed {
		writeJSON(w, http.StatusOK, body)
		return
	}
	w.Header().Set("Retry-After", httplimit.RetryAfter(a.RetryAfter))
	p := &problem{Type: httplimit.ProblemTypeQuotaExceeded, Status: http.StatusTooManyRequests, Title: "Too Many Requests",
		Detail: fmt.Sprintf("%s/%s: %d of %d in flight, or a window limit is spent; retry after %s", sc.name, pol.name, a.Held, inFlight.Max, a.RetryAfter)}
	writeProblem(w, p, struct {
		*problem
		acquireBody
	}{p, body})
}

func (s *Server) handleRelease(w http.ResponseWriter, r *http.Request) {
	_, pol, in, prob := s.state.Load().limitInput(r, false)
	if prob != nil {
		writeProblem(w, prob, nil)
		return
	}
	if in.leaseID == "" {
		writeProblem(w, badRequest("lease_id is required: the id from the acquire answer"), nil)
		return
	}
	key, err := pol.limiter.Key(in)
	if err != nil {
		writeProblem(w, badRequest("%v", err), nil)
		return
	}
	ok, err := pol.limiter.Release(r.Context(), ratelimit.Lease{Key: key, ID: in.leaseID})
	if err != nil {
		writeProblem(w, &problem{Status: http.StatusServiceUnavailable, Detail: err.Error()}, nil)
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"released": ok})
}

// inspectBody is the answer of POST .../inspect.
type inspectBody struct {
	Scene     string         `json:"scene"`
	Policy    string         `json:"policy"`
	Key       string         `json:"key"`
	Unlimited bool           `json:"unlimited"`
	Override  *overrideBody  `json:"override,omitempty"`
	InFlight  *inFlightBody  `json:"in_flight,omitempty"`
	Limits    []limitResult  `json:"limits"`
	Subject   map[string]any `json:"subject"`
}

func (s *Server) handleInspect(w http.ResponseWriter, r *http.Request) {
	st := s.state.Load()
	sc, pol, in, prob := st.limitInput(r, true)
	if prob != nil {
		writeProblem(w, prob, nil)
		return
	}
	ins, err := pol.limiter.Inspect(r.Context(), in)
	if err != nil {
		writeProblem(w, &problem{Status: http.StatusServiceUnavailable, Detail: err.Error()}, nil)
		return
	}
	body := inspectBody{Scene: sc.name, Policy: pol.name, Key: ins.Key, Unlimited: ins.Unlimited,
		Limits: results(ins.Decision), Subject: pairsMap(in.pairs)}
	if ins.Override != nil {
		ob := toOverrideBody(*ins.Override, "")
		body.Override = &ob
	}
	if ins.InFlight.Max > 0 {
		body.InFlight = &inFlightBody{Max: ins.InFlight.Max, TTLMS: ins.InFlight.TTL.Milliseconds(), Held: ins.Held}
	}
	writeJSON(w, http.StatusOK, body)
}

func (s *Server) handleReset(w http.ResponseWriter, r *http.Request) {
	st := s.state.Load()
	sc, pol, in, prob := st.limitInput(r, true)
	if prob != nil {
		writeProblem(w, prob, nil)
		return
	}
	n, err := pol.limiter.Reset(r.Context(), in)
	if err != nil {
		writeProblem(w, &problem{Status: http.StatusServiceUnavailable, Detail: err.Error()}, nil)
		return
	}
	s.log.InfoContext(r.Context(), "limits: counters reset", "audit", true, "by", st.auth.who(r),
		"scene", sc.name, "policy", pol.name, "subject", in.pairs, "removed", n)
	writeJSON(w, http.StatusOK, map[string]any{"scene": sc.name, "policy": pol.name, "removed": n})
}

// who names the token that made r, for the audit log.
func (a authState) who(r *http.Request) string {
	if secret, ok := bearer(r); ok {
		if tok := a.match(secret); tok != nil {
			return tok.name
		}
	}
	if a.open {
		return "(no auth configured)"
	}
	return "(unknown)"
}

func pairsMap(pairs []string) map[string]any {
	out := map[string]any{}
	for i := 0; i+1 < len(pairs); i += 2 {
		out[pairs[i]] = pairs[i+1]
	}
	return out
}
