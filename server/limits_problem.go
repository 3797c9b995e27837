package server

import (
	"errors"
	"net/http"

	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/ratelimit/httplimit"
)

// costBody is the 422 answer to a cost that a limit of the policy can never
// hold: the problem, the call, and the limit it exceeds.
type costBody struct {
	*problem
	Scene  string    `json:"scene"`
	Policy string    `json:"policy"`
	Cost   int64     `json:"cost"`
	Limit  limitSpec `json:"limit"`
}

// limitSpec is a limit as configured.
type limitSpec struct {
	Quota     int64  `json:"quota"`
	Window    string `json:"window"`
	WindowMS  int64  `json:"window_ms"`
	Algorithm string `json:"algorithm"`
	Burst     int64  `json:"burst,omitempty"`
}

// writeLimitError answers an error from a policy's limiter. A cost above
// the quota (or burst) of any one of the policy's limits can never be
// admitted, since a decision is all or nothing: that is a 422 without
// Retry-After, never a 429 whose Retry-After a client would honour
// forever. Anything else is unreachable with a validated config and input,
// and said plainly as a 400 if it happens rather than masked.
func writeLimitError(w http.ResponseWriter, sc *scene, pol *policy, err error) {
	var over *ratelimit.CostExceedsQuotaError
	if !errors.As(err, &over) {
		writeProblem(w, badRequest("%v", err), nil)
		return
	}
	l := over.Limit
	p := &problem{Status: http.StatusUnprocessableEntity,
		Detail: httplimit.Rejection{Status: http.StatusUnprocessableEntity, Cost: over}.Detail()}
	writeProblem(w, p, costBody{problem: p, Scene: sc.name, Policy: pol.name, Cost: over.Cost, Limit: limitSpec{
		Quota: l.Quota, Window: fmtWindow(l.Window), WindowMS: l.Window.Milliseconds(), Algorithm: l.Algorithm.String(), Burst: l.Burst,
	}})
}
