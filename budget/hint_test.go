package budget_test

import (
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/sluicehq/sluice/budget"
)

func response(status int, kv ...string) *http.Response {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return &http.Response{StatusCode: status, Header: h}
}

// TestFromResponse reads header sets as upstreams send them.
func TestFromResponse(t *testing.T) {
	now := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	at := func(d time.Duration) time.Time { return now.Add(d) }
	tests := []struct {
		name string
		resp *http.Response
		want budget.Hint
	}{
		{"429 with Retry-After seconds", response(429, "Retry-After", "2"),
			budget.Hint{Limited: true, ClosedUntil: at(2 * time.Second)}},
		{"503 with Retry-After as an HTTP date", response(503, "Retry-After", "Fri, 02 Jan 2026 15:05:05 GMT"),
			budget.Hint{Limited: true, ClosedUntil: at(time.Minute)}},
		{"429 without Retry-After", response(429),
			budget.Hint{Limited: true}},
		{"503 without Retry-After is not a limit", response(503), budget.Hint{}},
		{"200 with Retry-After is ignored", response(200, "Retry-After", "30"), budget.Hint{}},
		{"unreadable Retry-After", response(429, "Retry-After", "soon"), budget.Hint{Limited: true}},
		{"IETF fields (draft 03 to 06)", response(200, "RateLimit-Limit", "100, 100;w=60", "RateLimit-Remaining", "0", "RateLimit-Reset", "50"),
			budget.Hint{Limit: map[string]int64{"requests": 100}, Remaining: map[string]int64{"requests": 0},
				Reset: map[string]time.Time{"requests": at(50 * time.Second)}}},
		{"IETF dictionary (draft 07)", response(200, "RateLimit", "limit=100, remaining=7, reset=5"),
			budget.Hint{Limit: map[string]int64{"requests": 100}, Remaining: map[string]int64{"requests": 7},
				Reset: map[string]time.Time{"requests": at(5 * time.Second)}}},
		{"IETF structured with policy (draft 08 on)", response(200,
			"RateLimit-Policy", `"burst";q=100;w=60,"daily";q=1000;w=86400`, "RateLimit", `"burst";r=0;t=30, "daily";r=900;t=3600`),
			budget.Hint{Limit: map[string]int64{"requests": 100}, Remaining: map[string]int64{"requests": 0},
				Reset: map[string]time.Time{"requests": at(30 * time.Second)}}},
		{"IETF structured with a unit", response(200,
			"RateLimit-Policy", `"bytes";q=65536;qu="content-bytes";w=10`, "RateLimit", `"bytes";r=1024;t=4`),
			budget.Hint{Limit: map[string]int64{"bytes": 65536}, Remaining: map[string]int64{"bytes": 1024},
				Reset: map[string]time.Time{"bytes": at(4 * time.Second)}}},
		{"OpenAI", response(200,
			"x-ratelimit-limit-requests", "500", "x-ratelimit-limit-tokens", "200000",
			"x-ratelimit-remaining-requests", "499", "x-ratelimit-remaining-tokens", "0",
			"x-ratelimit-reset-requests", "120ms", "x-ratelimit-reset-tokens", "6m0s"),
			budget.Hint{Limit: map[string]int64{"requests": 500, "tokens": 200000},
				Remaining: map[string]int64{"requests": 499, "tokens": 0},
				Reset:     map[string]time.Time{"requests": at(120 * time.Millisecond), "tokens": at(6 * time.Minute)}}},
		{"OpenAI durations with fractions", response(200, "x-ratelimit-remaining-tokens", "10", "x-ratelimit-reset-tokens", "1m30.5s"),
			budget.Hint{Remaining: map[string]int64{"tokens": 10}, Reset: map[string]time.Time{"tokens": at(90*time.Second + 500*time.Millisecond)}}},
		{"Anthropic", response(429, "Retry-After", "12",
			"anthropic-ratelimit-requests-limit", "50", "anthropic-ratelimit-requests-remaining", "49",
			"anthropic-ratelimit-requests-reset", "2026-01-02T15:04:06Z",
			"anthropic-ratelimit-input-tokens-limit", "40000", "anthropic-ratelimit-input-tokens-remaining", "0",
			"anthropic-ratelimit-input-tokens-reset", "2026-01-02T15:04:17Z"),
			budget.Hint{Limited: true, ClosedUntil: at(12 * time.Second),
				Limit:     map[string]int64{"requests": 50, "input-tokens": 40000},
				Remaining: map[string]int64{"requests": 49, "input-tokens": 0},
				Reset:     map[string]time.Time{"requests": at(time.Second), "input-tokens": at(12 * time.Second)}}},
		{"GitHub", response(403, "x-ratelimit-limit", "5000", "x-ratelimit-remaining", "0",
			"x-ratelimit-used", "5000", "x-ratelimit-reset", "1767366345", "x-ratelimit-resource", "core"),
			budget.Hint{Limit: map[string]int64{"requests": 5000}, Remaining: map[string]int64{"requests": 0},
				Reset: map[string]time.Time{"requests": time.Unix(1767366345, 0)}}},
		{"x-ratelimit-reset in seconds", response(200, "X-RateLimit-Remaining", "3", "X-RateLimit-Reset", "60"),
			budget.Hint{Remaining: map[string]int64{"requests": 3}, Reset: map[string]time.Time{"requests": at(time.Minute)}}},
		{"nothing", response(200, "Content-Type", "text/plain"), budget.Hint{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := budget.FromResponse(tc.resp, now)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("FromResponse:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
	if !budget.FromResponse(nil, now).IsZero() {
		t.Errorf("FromResponse(nil) is not zero")
	}
}

func TestHintUntil(t *testing.T) {
	now := time.Unix(1000, 0)
	h := budget.Hint{ClosedUntil: now.Add(time.Second),
		Remaining: map[string]int64{"requests": 5, "tokens": 0},
		Reset:     map[string]time.Time{"requests": now.Add(time.Hour), "tokens": now.Add(time.Minute)}}
	if got := h.Until(); !got.Equal(now.Add(time.Minute)) {
		t.Errorf("Until = %v, want the reset of the unit with nothing left (+1m)", got)
	}
}
