package server

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/server/config"
)

// buildOverrides makes the overrides of cfg: the static ones (including
// every unlimited policy) over the dynamic ones kept in the limit store
// when it can keep them.
func (s *Server) buildOverrides(cfg *config.Config) (*ratelimit.Overrides, error) {
	var static []ratelimit.Override
	for _, o := range cfg.Limits.Overrides {
		static = append(static, o.Ratelimit(cfg.Limits.Scenes[o.Scene].Subject))
	}
	for sn, sc := range cfg.Limits.Scenes {
		for pn, pc := range sc.Policies {
			if pc.Unlimited {
				static = append(static, ratelimit.Override{Scene: sn, Policy: pn, Unlimited: true})
			}
		}
	}
	store, _ := ratelimit.Facet[ratelimit.OverrideStore](s.limits)
	return ratelimit.NewOverrides(store, ratelimit.OverridesOptions{Static: static, TTL: cfg.Limits.OverrideTTL.D(), Clock: s.clock})
}

// overrideBody is an override in JSON.
type overrideBody struct {
	Scene     string         `json:"scene"`
	Policy    string         `json:"policy"`
	Subject   map[string]any `json:"subject,omitempty"`
	Limits    []limitSpec    `json:"limits,omitempty"`
	InFlight  *inFlightSpec  `json:"in_flight,omitempty"`
	Unlimited bool           `json:"unlimited,omitempty"`
	// Source is "static" (configuration) or "dynamic" (set through the
	// API); empty in requests.
	Source string `json:"source,omitempty"`
}

// inFlightSpec is an in-flight limit as set.
type inFlightSpec struct {
	Max   int64 `json:"max"`
	TTLMS int64 `json:"ttl_ms"`
}

func toOverrideBody(o ratelimit.Override, source string) overrideBody {
	b := overrideBody{Scene: o.Scene, Policy: o.Policy, Unlimited: o.Unlimited, Source: source}
	if len(o.Subject) > 0 {
		b.Subject = pairsMap(o.Subject)
	}
	for _, l := range o.Limits {
		b.Limits = append(b.Limits, limitSpec{Quota: l.Quota, Window: fmtWindow(l.Window), WindowMS: l.Window.Milliseconds(), Algorithm: l.Algorithm.String(), Burst: l.Burst})
	}
	if o.InFlight != nil {
		b.InFlight = &inFlightSpec{Max: o.InFlight.Max, TTLMS: o.InFlight.TTL.Milliseconds()}
	}
	return b
}

func (s *Server) handleListOverrides(w http.ResponseWriter, r *http.Request) {
	static, dynamic, err := s.state.Load().overrides.List(r.Context())
	if err != nil {
		writeProblem(w, &problem{Status: http.StatusServiceUnavailable, Detail: err.Error()}, nil)
		return
	}
	out := []overrideBody{}
	for _, o := range dynamic {
		out = append(out, toOverrideBody(o, "dynamic"))
	}
	for _, o := range static {
		out = append(out, toOverrideBody(o, "static"))
	}
	writeJSON(w, http.StatusOK, map[string]any{"overrides": out})
}

// overrideRequest is the body of PUT and DELETE /v1/limit-overrides/{scene}/{policy}.
type overrideRequest struct {
	Subject   map[string]any `json:"subject"`
	Limits    []limitSpec    `json:"limits"`
	InFlight  *inFlightSpec  `json:"in_flight"`
	Unlimited bool           `json:"unlimited"`
}

// override checks the path and body and builds the override they name.
// del is for DELETE, whose body holds only the subject: it must be given,
// {} for the policy's own override, so that a forgotten body is not a
// silent no-op.
func (st *state) override(r *http.Request, del bool) (ratelimit.Override, *problem) {
	sc, ok := st.scenes[r.PathValue("scene")]
	if !ok {
		return ratelimit.Override{}, notFound("unknown scene %q", r.PathValue("scene"))
	}
	pol, ok := sc.policies[r.PathValue("policy")]
	if !ok {
		return ratelimit.Override{}, notFound("unknown policy %q in scene %q", r.PathValue("policy"), sc.name)
	}
	var req overrideRequest
	if p := decodeJSON(r, &req, del); p != nil {
		return ratelimit.Override{}, p
	}
	if del && req.Subject == nil {
		return ratelimit.Override{}, badRequest(`subject is required: the subject's fields, such as {"subject":{%q:"42"}}, or {"subject":{}} for the policy's own override`, sc.subject[0])
	}
	o := ratelimit.Override{Scene: sc.name, Policy: pol.name, Unlimited: req.Unlimited}
	if len(req.Subject) > 0 {
		pairs, p := sc.pairs(req.Subject)
		if p != nil {
			return o, p
		}
		o.Subject = pairs
	}
	limits, p := overrideLimits(req.Limits)
	if p != nil {
		return o, p
	}
	o.Limits = limits
	if req.InFlight != nil {
		o.InFlight = &ratelimit.InFlight{Max: req.InFlight.Max, TTL: time.Duration(req.InFlight.TTLMS) * time.Millisecond}
		if o.InFlight.TTL == 0 {
			o.InFlight.TTL = config.DefaultLeaseTTL
		}
	}
	return o, nil
}

// overrideLimits reads the limits of an override by the rules the config
// file's limits follow (config.LimitsProblems), naming the API field of
// the first problem: limits[0].burst.
func overrideLimits(specs []limitSpec) ([]ratelimit.Limit, *problem) {
	ls := make([]config.Limit, len(specs))
	for i, l := range specs {
		window := time.Duration(l.WindowMS) * time.Millisecond
		if l.Window != "" {
			var err error
			if window, err = time.ParseDuration(l.Window); err != nil {
				return nil, badRequest("limits[%d].window must be a duration such as 60s, got %q", i, l.Window)
			}
		}
		ls[i] = config.Limit{Quota: l.Quota, Window: config.Duration(window), Algorithm: l.Algorithm, Burst: l.Burst}
	}
	if probs := config.LimitsProblems(ls); len(probs) > 0 {
		return nil, badRequest("%s %s", probs[0].Path, probs[0].Message)
	}
	out := make([]ratelimit.Limit, len(ls))
	for i, l := range ls {
		out[i] = l.Limit()
	}
	return out, nil
}

// overrideRule names, in an override's refusal from package ratelimit,
// the API's field instead of the Go one.
func overrideRule(err error) string {
	var ia *ratelimit.InvalidArgumentError
	if !errors.As(err, &ia) {
		return err.Error()
	}
	names := map[string]string{
		"Override.Subject": "subject", "Override.Unlimited": "unlimited", "InFlight.Max": "in_flight.max",
		"InFlight.TTL": "in_flight.ttl_ms", "Override.Scene": "scene", "Override.Policy": "policy",
	}
	if ia.Field == "Override" {
		return "the body " + ia.Rule
	}
	if n, ok := names[ia.Field]; ok {
		return n + " " + ia.Rule
	}
	return strings.TrimPrefix(err.Error(), "ratelimit: ")
}

func (s *Server) handleSetOverride(w http.ResponseWriter, r *http.Request) {
	st := s.state.Load()
	o, p := st.override(r, false)
	if p != nil {
		writeProblem(w, p, nil)
		return
	}
	if err := o.Validate(); err != nil {
		writeProblem(w, badRequest("%s", overrideRule(err)), nil)
		return
	}
	if err := st.overrides.Set(r.Context(), o); err != nil {
		writeProblem(w, &problem{Status: http.StatusServiceUnavailable, Detail: err.Error()}, nil)
		return
	}
	s.log.InfoContext(r.Context(), "limits: override set", "audit", true, "by", st.auth.who(r),
		"scene", o.Scene, "policy", o.Policy, "subject", o.Subject, "unlimited", o.Unlimited, "limits", len(o.Limits))
	writeJSON(w, http.StatusOK, toOverrideBody(o, "dynamic"))
}

func (s *Server) handleDeleteOverride(w http.ResponseWriter, r *http.Request) {
	st := s.state.Load()
	o, p := st.override(r, true)
	if p != nil {
		writeProblem(w, p, nil)
		return
	}
	ok, err := st.overrides.Delete(r.Context(), o.Scene, o.Policy, o.Subject)
	if err != nil {
		writeProblem(w, &problem{Status: http.StatusServiceUnavailable, Detail: err.Error()}, nil)
		return
	}
	s.log.InfoContext(r.Context(), "limits: override deleted", "audit", true, "by", st.auth.who(r),
		"scene", o.Scene, "policy", o.Policy, "subject", o.Subject, "existed", ok)
	writeJSON(w, http.StatusOK, map[string]bool{"deleted": ok})
}
