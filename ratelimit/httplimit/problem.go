package httplimit

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/ratelimit"
)

// ProblemTypeQuotaExceeded is the problem type of a 429 over a limit, from
// the IANA HTTP Problem Types registry.
const ProblemTypeQuotaExceeded = "https://iana.org/assignments/http-problem-types#quota-exceeded"

// Problem is an RFC 9457 problem detail, written as
// application/problem+json. Empty fields are left out; an empty Type means
// "about:blank" (the status code says it all).
type Problem struct {
	Type   string `json:"type,omitempty"`
	Title  string `json:"title,omitempty"`
	Status int    `json:"status,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// WriteProblem writes p with status p.Status (500 when unset) as
// application/problem+json. Headers already set on w are kept.
func WriteProblem(w http.ResponseWriter, p Problem) {
	if p.Status == 0 {
		p.Status = http.StatusInternalServerError
	}
	if p.Title == "" {
		p.Title = http.StatusText(p.Status)
	}
	body, err := json.Marshal(p)
	if err != nil { // cannot happen: four plain fields
		body = []byte(`{}`)
	}
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(len(body)+1))
	w.WriteHeader(p.Status)
	_, _ = w.Write(append(body, '\n')) // a failed write means the client left
}

// Rejection describes a request the middleware refuses.
type Rejection struct {
	// Status is 429 (over a limit), 422 (the request costs more than a
	// limit ever admits) or 503 (the store is down and the limiter fails
	// closed).
	Status int
	// Policy is the policy the request was counted under.
	Policy string
	// Decision is the store's decision; empty for a 422 or a 503.
	Decision ratelimit.Decision
	// Fault is the store fault behind a 503; nil otherwise.
	Fault error
	// Cost names the cost and the limit behind a 422; nil otherwise.
	Cost *ratelimit.CostExceedsQuotaError
}

// Detail is the human-readable reason: "Too many requests: N every S
// seconds" for the limit that denied, "Cost C exceeds the quota: at most
// N every S seconds, so the request can never be admitted" for a 422, or a
// store-unavailable message.
func (rj Rejection) Detail() string {
	if res, ok := rj.Decision.Denied(); ok {
		return "Too many requests: " + strconv.FormatInt(res.Limit.Quota, 10) + " every " + seconds(res.Limit.Window) + " seconds"
	}
	if c := rj.Cost; c != nil {
		at := "quota: at most " + strconv.FormatInt(c.Limit.Quota, 10) + " every " + seconds(c.Limit.Window) + " seconds"
		if c.Limit.Capacity() != c.Limit.Quota {
			at = "burst: at most " + strconv.FormatInt(c.Limit.Capacity(), 10) + " at once"
		}
		return "Cost " + strconv.FormatInt(c.Cost, 10) + " exceeds the " + at + ", so the request can never be admitted"
	}
	if rj.Fault != nil {
		return "Rate limit unavailable, retry later"
	}
	return http.StatusText(rj.Status)
}

func seconds(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) }

// Responder writes a refused request. The RateLimit fields and Retry-After
// are already set on w for a 429 (Retry-After also for a 503; neither for a
// 422); the Responder writes the status and the body.
type Responder func(w http.ResponseWriter, r *http.Request, rj Rejection)

// DefaultResponder writes rj as application/problem+json: for a 429 the
// type is ProblemTypeQuotaExceeded and the detail rj.Detail().
func DefaultResponder(w http.ResponseWriter, _ *http.Request, rj Rejection) {
	p := Problem{Status: rj.Status, Detail: rj.Detail()}
	if rj.Status == http.StatusTooManyRequests {
		p.Type = ProblemTypeQuotaExceeded
	}
	WriteProblem(w, p)
}

// FaultRetryAfter is the Retry-After sent with a 503 when a fail-closed
// store is down: no one knows when it will be back, so clients are told to
// wait a short while rather than hammer it.
const FaultRetryAfter = time.Second
