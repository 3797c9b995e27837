package server

import (
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/ratelimit/httplimit"
	"github.com/sluicehq/sluice/server/config"
)

// scene is a configured scene with one Limiter per policy.
type scene struct {
	name     string
	subject  []string
	policies map[string]*policy
}

type policy struct {
	name    string
	limits  []ratelimit.Limit
	shadow  bool
	mode    ratelimit.FailureMode
	limiter *ratelimit.Limiter[limitInput]
	// inFlight is the policy's in-flight limit; zero Max: none.
	inFlight ratelimit.InFlight
}

// limitInput is what one decision is made of: the subject as type/id pairs
// in the scene's field order, and the cost.
type limitInput struct {
	pairs []string
	cost  int64
	// waitMS, atMost and leaseID carry the options of limits_ops.go.
	waitMS  int64
	atMost  bool
	leaseID string
}

func (s *Server) buildScene(cfg *config.Config, name string, sc config.Scene, ov *ratelimit.Overrides) (*scene, error) {
	out := &scene{name: name, subject: sc.Subject, policies: map[string]*policy{}}
	for pname, pc := range sc.Policies {
		p := &policy{name: pname, shadow: sc.Shadow, mode: ratelimit.FailOpen}
		if pc.Shadow != nil {
			p.shadow = *pc.Shadow
		}
		if mode := pc.FailureMode; mode == "closed" || (mode == "" && sc.FailureMode == "closed") {
			p.mode = ratelimit.FailClosed
		}
		for _, l := range pc.Limits {
			p.limits = append(p.limits, l.Limit())
		}
		if pc.InFlight != nil {
			p.inFlight = pc.InFlight.Limit()
		}
		lim, err := ratelimit.Define(s.limits, ratelimit.Definition[limitInput]{
			Scene:       name,
			Policy:      func(limitInput) string { return pname },
			Subject:     func(in limitInput) []string { return in.pairs },
			Limits:      func(limitInput) []ratelimit.Limit { return p.limits },
			Cost:        func(in limitInput) int64 { return in.cost },
			FailureMode: p.mode,
			Shadow:      p.shadow,
			InFlight:    func(limitInput) ratelimit.InFlight { return p.inFlight },
		}, ratelimit.WithTimeout(cfg.Limits.Timeout.D()), ratelimit.WithLogger(s.log), ratelimit.WithObserver(s.metrics.observeLimit),
			ratelimit.WithOverrides(ov), ratelimit.WithClock(s.clock))
		if err != nil {
			return nil, err
		}
		p.limiter = lim
		out.policies[pname] = p
	}
	return out, nil
}

// limitRequest is the body of POST /v1/limits/{scene}/{policy}.
type limitRequest struct {
	Subject map[string]any `json:"subject"`
	Cost    *int64         `json:"cost"`
	// WaitMS is how long the caller will wait for admission (limits_ops.go).
	WaitMS *int64 `json:"wait_ms"`
	// AtMost grants as much of Cost as the limits admit.
	AtMost bool `json:"at_most"`
	// LeaseID names the lease to release.
	LeaseID string `json:"lease_id"`
}

// limitResult is one limit's part of a decision in JSON.
type limitResult struct {
	Quota        int64  `json:"quota"`
	Window       string `json:"window"`
	WindowMS     int64  `json:"window_ms"`
	Algorithm    string `json:"algorithm"`
	Burst        int64  `json:"burst,omitempty"`
	Allowed      bool   `json:"allowed"`
	Used         int64  `json:"used"`
	Remaining    int64  `json:"remaining"`
	ResetAfterMS int64  `json:"reset_after_ms"`
	RetryAfterMS int64  `json:"retry_after_ms"`
}

// decisionBody is the answer of the limit routes.
type decisionBody struct {
	Allowed bool   `json:"allowed"`
	Scene   string `json:"scene"`
	Policy  string `json:"policy"`
	Cost    int64  `json:"cost"`
	// Shadow is set when the scene is in shadow mode; ShadowDenied when
	// the limit denied but shadow mode allowed.
	Shadow       bool `json:"shadow,omitempty"`
	ShadowDenied bool `json:"shadow_denied,omitempty"`
	// FailureMode is set when the store failed and the failure mode
	// answered ("open" or "closed").
	FailureMode  string        `json:"failure_mode,omitempty"`
	RetryAfterMS int64         `json:"retry_after_ms"`
	Limits       []limitResult `json:"limits"`
	// Granted is the cost granted by a partial grant (at_most).
	Granted *int64 `json:"granted,omitempty"`
	// WaitedMS is how long the call waited for admission (wait_ms).
	WaitedMS int64 `json:"waited_ms,omitempty"`
}

type deniedBody struct {
	*problem
	decisionBody
}

func (s *Server) handleLimit(peek bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		st := s.state.Load()
		sc, pol, in, prob := st.limitInput(r, peek)
		if prob != nil {
			writeProblem(w, prob, nil)
			return
		}
		if in.waitMS != 0 || in.atMost {
			s.handleLimitMore(w, r, sc, pol, in) // limits_ops.go
			return
		}
		v, err := pol.limiter.Check(r.Context(), in)
		if err != nil {
			writeLimitError(w, sc, pol, err)
			return
		}
		s.writeVerdict(w, sc, pol, in.cost, v)
	}
}

// limitInput checks the path and body and builds the decision's input.
func (st *state) limitInput(r *http.Request, peek bool) (*scene, *policy, limitInput, *problem) {
	sc, ok := st.scenes[r.PathValue("scene")]
	if !ok {
		return nil, nil, limitInput{}, notFound("unknown scene %q (scenes: %s)", r.PathValue("scene"), strings.Join(st.sceneNames(), ", "))
	}
	pol, ok := sc.policies[r.PathValue("policy")]
	if !ok {
		return nil, nil, limitInput{}, notFound("unknown policy %q in scene %q (policies: %s)", r.PathValue("policy"), sc.name, strings.Join(sc.policyNames(), ", "))
	}
	var req limitRequest
	if p := decodeJSON(r, &req, false); p != nil {
		return nil, nil, limitInput{}, p
	}
	pairs, p := sc.pairs(req.Subject)
	if p != nil {
		return nil, nil, limitInput{}, p
	}
	in := limitInput{pairs: pairs, cost: 1}
	if req.Cost != nil {
		in.cost = *req.Cost
	}
	if in.cost < 0 {
		return nil, nil, limitInput{}, badRequest("cost must not be negative, got %d", in.cost)
	}
	if peek {
		in.cost = 0
	}
	if p := in.options(req, peek); p != nil {
		return nil, nil, limitInput{}, p
	}
	return sc, pol, in, nil
}

// pairs turns the JSON subject into type/id pairs in the scene's order,
// naming the field of any problem.
func (sc *scene) pairs(subject map[string]any) ([]string, *problem) {
	for k := range subject {
		if !contains(sc.subject, k) {
			return nil, badRequest("unknown subject field %q for scene %q (fields: %s)", k, sc.name, strings.Join(sc.subject, ", "))
		}
	}
	pairs := make([]string, 0, 2*len(sc.subject))
	for _, f := range sc.subject {
		raw, ok := subject[f]
		if !ok {
			return nil, badRequest("missing subject field %q for scene %q (fields: %s)", f, sc.name, strings.Join(sc.subject, ", "))
		}
		id, p := subjectValue(f, raw)
		if p != nil {
			return nil, p
		}
		pairs = append(pairs, f, id)
	}
	return pairs, nil
}

func (s *Server) writeVerdict(w http.ResponseWriter, sc *scene, pol *policy, cost int64, v ratelimit.Verdict) {
	s.writeVerdictBody(w, sc, pol, cost, v, nil)
}

func (s *Server) writeVerdictBody(w http.ResponseWriter, sc *scene, pol *policy, cost int64, v ratelimit.Verdict, more func(*decisionBody)) {
	body := decisionBody{Allowed: v.Allowed, Scene: sc.name, Policy: pol.name, Cost: cost, Shadow: pol.shadow, Limits: results(v.Decision)}
	h := w.Header()
	if v.Fault != nil {
		body.FailureMode = pol.mode.String()
		if !v.Allowed {
			h.Set("Retry-After", httplimit.RetryAfter(httplimit.FaultRetryAfter))
			writeProblem(w, &problem{Status: http.StatusServiceUnavailable, Detail: fmt.Sprintf("rate-limit store unavailable and scene %q fails closed: retry later", sc.name)}, nil)
			return
		}
		writeJSON(w, http.StatusOK, body)
		return
	}
	if more != nil {
		more(&body)
	}
	d := v.Decision
	body.RetryAfterMS = d.RetryAfter.Milliseconds()
	if v.Allowed && !d.Allowed { // shadow: report the denial, answer allowed
		body.ShadowDenied = true
		d.Allowed, d.RetryAfter = true, 0
	}
	httplimit.SetHeaders(h, sc.name+"/"+pol.name, d, s.state.Load().cfg.Limits.LegacyHeaders)
	if v.Allowed || cost == 0 {
		writeJSON(w, http.StatusOK, body)
		return
	}
	detail := httplimit.Rejection{Status: http.StatusTooManyRequests, Decision: d}.Detail()
	p := &problem{Type: httplimit.ProblemTypeQuotaExceeded, Status: http.StatusTooManyRequests, Title: "Too Many Requests", Detail: detail}
	writeProblem(w, p, deniedBody{problem: p, decisionBody: body})
}

func results(d ratelimit.Decision) []limitResult {
	out := make([]limitResult, len(d.Results))
	for i, r := range d.Results {
		out[i] = limitResult{
			Quota: r.Limit.Quota, Window: fmtWindow(r.Limit.Window), WindowMS: r.Limit.Window.Milliseconds(),
			Algorithm: r.Limit.Algorithm.String(), Burst: r.Limit.Burst, Allowed: r.Allowed, Used: r.Used,
			Remaining: r.Remaining, ResetAfterMS: r.ResetAfter.Milliseconds(), RetryAfterMS: r.RetryAfter.Milliseconds(),
		}
	}
	return out
}

// fmtWindow writes a window the way a config would: "60s" rather than
// "1m0s".
func fmtWindow(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return d.String()
}

// sceneList is GET /v1/limits: what can be asked.
type sceneList struct {
	Scenes []sceneInfo `json:"scenes"`
}

type sceneInfo struct {
	Name        string       `json:"name"`
	Subject     []string     `json:"subject"`
	Policies    []policyInfo `json:"policies"`
	FailureMode string       `json:"failure_mode"`
}

type policyInfo struct {
	Name        string        `json:"name"`
	FailureMode string        `json:"failure_mode"`
	Shadow      bool          `json:"shadow"`
	Limits      []limitResult `json:"limits"`
}

func (s *Server) handleScenes(w http.ResponseWriter, r *http.Request) {
	st := s.state.Load()
	out := sceneList{Scenes: []sceneInfo{}}
	for _, name := range st.sceneNames() {
		sc := st.scenes[name]
		info := sceneInfo{Name: name, Subject: sc.subject, FailureMode: st.cfg.Limits.Scenes[name].FailureMode}
		if info.FailureMode == "" {
			info.FailureMode = "open"
		}
		for _, pn := range sc.policyNames() {
			p := sc.policies[pn]
			pi := policyInfo{Name: pn, FailureMode: p.mode.String(), Shadow: p.shadow}
			for _, l := range p.limits {
				pi.Limits = append(pi.Limits, limitResult{Quota: l.Quota, Window: fmtWindow(l.Window), WindowMS: l.Window.Milliseconds(), Algorithm: l.Algorithm.String(), Burst: l.Burst, Allowed: true, Remaining: l.Quota})
			}
			info.Policies = append(info.Policies, pi)
		}
		out.Scenes = append(out.Scenes, info)
	}
	writeJSON(w, http.StatusOK, out)
}

func (st *state) sceneNames() []string  { return sortedNames(st.scenes) }
func (sc *scene) policyNames() []string { return sortedNames(sc.policies) }

func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

var errNoQueue = errors.New("server: no job queue configured")
