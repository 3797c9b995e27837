package server

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/server/config"
)

// An override set through the API follows the rules of the file's limits,
// and every refusal names the API field.
func TestOverrideRefusalsNameAPIFields(t *testing.T) {
	t.Parallel()
	h := newHarness(t, opsConfig, false)
	cases := []struct{ name, body, detail string }{
		{"burst on a fixed window", `{"subject":{"team":"b"},"limits":[{"quota":10,"window":"1s","burst":9}]}`, "limits[0].burst only applies to algorithm token-bucket"},
		{"quota 0", `{"subject":{"team":"b"},"limits":[{"quota":0,"window":"1s"}]}`, "limits[0].quota must be a positive integer, got 0"},
		{"no window", `{"subject":{"team":"b"},"limits":[{"quota":1}]}`, "limits[0].window is required"},
		{"bad algorithm", `{"subject":{"team":"b"},"limits":[{"quota":1,"window":"1s","algorithm":"leaky"}]}`, "limits[0].algorithm must be"},
		{"shared counter", `{"subject":{"team":"b"},"limits":[{"quota":1,"window":"1s"},{"quota":2,"window_ms":1000}]}`, "limits[1] has the same algorithm and window as limits[0]"},
		{"in-flight max", `{"subject":{"team":"b"},"in_flight":{"max":0}}`, "in_flight.max must be a positive integer"},
		{"unlimited and limits", `{"subject":{"team":"b"},"unlimited":true,"limits":[{"quota":1,"window":"1s"}]}`, "unlimited must not be set together"},
	}
	for _, c := range cases {
		r := h.do("PUT", "/v1/limit-overrides/team/batch", "", c.body)
		detail, _ := r.body["detail"].(string)
		if r.status != 400 || !strings.HasPrefix(detail, c.detail) || strings.Contains(detail, "Limit.") || strings.Contains(detail, "Override.") {
			t.Errorf("%s: %d %q, want 400 %q...", c.name, r.status, detail, c.detail)
		}
	}
	// The file refuses the same limit with the same rule.
	probs := config.LimitsProblems([]config.Limit{{Quota: 10, Window: config.Duration(1e9), Burst: 9}})
	if len(probs) != 1 || probs[0].Path != "limits[0].burst" || probs[0].Message != "only applies to algorithm token-bucket" {
		t.Errorf("LimitsProblems = %v", probs)
	}
}

// DELETE names the subject: a missing one is a 400, {} deletes the
// policy's own override.
func TestOverrideDeleteNeedsSubject(t *testing.T) {
	t.Parallel()
	h := newHarness(t, opsConfig, false)
	for _, body := range []string{"", `{}`, `{"subject":null}`} {
		r := h.do("DELETE", "/v1/limit-overrides/team/batch", "", body)
		detail, _ := r.body["detail"].(string)
		if r.status != 400 || !strings.HasPrefix(detail, "subject is required") {
			t.Errorf("DELETE with body %q: %d %s, want 400 naming subject", body, r.status, r.raw)
		}
	}
	if r := h.do("PUT", "/v1/limit-overrides/team/batch", "", `{"limits":[{"quota":1,"window":"1h"}]}`); r.status != 200 {
		t.Fatalf("policy-wide put: %d %s", r.status, r.raw)
	}
	if r := h.do("DELETE", "/v1/limit-overrides/team/batch", "", `{"subject":{}}`); r.status != 200 || r.body["deleted"] != true {
		t.Errorf("policy-wide delete: %d %s", r.status, r.raw)
	}
}
