package server

import (
	"testing"
)

const opsConfig = `
limits:
  legacy_headers: true
  scenes:
    team:
      subject: [team]
      policies:
        export:
          limits: [{quota: 10, window: 1h}]
          in_flight: {max: 2, ttl: 30s}
        send: {limits: [{quota: 10, window: 1s, algorithm: token-bucket, burst: 1}]}
        batch: {limits: [{quota: 5, window: 1h}]}
        free: {unlimited: true}
  overrides:
    - {scene: team, policy: batch, subject: {team: vip}, limits: [{quota: 100, window: 1h}]}
`

func TestAcquireReleaseOverHTTP(t *testing.T) {
	t.Parallel()
	h := newHarness(t, opsConfig, false)
	acq := func() reply { return h.do("POST", "/v1/limits/team/export/acquire", "", `{"subject":{"team":"a"}}`) }
	first, second, third := acq(), acq(), acq()
	if first.status != 200 || second.status != 200 || third.status != 429 {
		t.Fatalf("acquire x3: %d %d %d (%s), want 200 200 429", first.status, second.status, third.status, third.raw)
	}
	if third.header.Get("Retry-After") != "30" {
		t.Errorf("full: Retry-After %q, want 30 (the earliest lease's TTL)", third.header.Get("Retry-After"))
	}
	id := first.body["lease"].(map[string]any)["id"].(string)
	rel := h.do("POST", "/v1/limits/team/export/release", "", `{"subject":{"team":"a"},"lease_id":"`+id+`"}`)
	if rel.status != 200 || rel.body["released"] != true {
		t.Fatalf("release: %d %s", rel.status, rel.raw)
	}
	if r := acq(); r.status != 200 {
		t.Errorf("acquire after a release: %d %s", r.status, r.raw)
	}
	ins := h.do("POST", "/v1/limits/team/export/inspect", "", `{"subject":{"team":"a"}}`)
	if ins.status != 200 || ins.body["in_flight"].(map[string]any)["held"] != float64(2) {
		t.Errorf("inspect: %d %s, want 2 held", ins.status, ins.raw)
	}
	if r := h.do("POST", "/v1/limits/team/export/reset", "", `{"subject":{"team":"a"}}`); r.status != 200 || r.body["removed"] != float64(3) {
		t.Errorf("reset: %d %s, want 3 removed (the window counter and two leases)", r.status, r.raw)
	}
	if r := acq(); r.status != 200 {
		t.Errorf("acquire after a reset: %d %s", r.status, r.raw)
	}
}

func TestWaitAndAtMostOverHTTP(t *testing.T) {
	t.Parallel()
	h := newHarness(t, opsConfig, false)
	send := func(body string) reply { return h.do("POST", "/v1/limits/team/send", "", body) }
	if r := send(`{"subject":{"team":"a"},"wait_ms":50}`); r.status != 200 || r.header.Get("X-RateLimit-Limit") == "" {
		t.Fatalf("first send: %d %v %s, want 200 with legacy headers", r.status, r.header, r.raw)
	}
	// The next slot is 100ms away: beyond a 50ms wait, refused at once.
	if r := send(`{"subject":{"team":"a"},"wait_ms":50}`); r.status != 429 || r.body["retry_after_ms"] != float64(100) {
		t.Errorf("second send: %d %s, want 429 retry after 100ms", r.status, r.raw)
	}
	if r := send(`{"subject":{"team":"a"},"wait_ms":-1}`); r.status != 400 {
		t.Errorf("wait_ms -1: %d, want 400", r.status)
	}
	batch := func(team string, cost int) reply {
		return h.do("POST", "/v1/limits/team/batch", "", `{"subject":{"team":"`+team+`"},"cost":`+itoa(cost)+`,"at_most":true}`)
	}
	if r := batch("a", 3); r.status != 200 || r.body["granted"] != float64(3) {
		t.Errorf("at_most 3 of 5: %d %s", r.status, r.raw)
	}
	if r := batch("a", 7); r.status != 200 || r.body["granted"] != float64(2) {
		t.Errorf("at_most 7 with 2 left: %d %s, want 2 granted", r.status, r.raw)
	}
	if r := batch("vip", 50); r.body["granted"] != float64(50) {
		t.Errorf("static override of 100 for vip: %s, want 50 granted", r.raw)
	}
	for range 3 {
		if r := h.do("POST", "/v1/limits/team/free", "", `{"subject":{"team":"a"}}`); r.status != 200 {
			t.Errorf("unlimited policy: %d %s", r.status, r.raw)
		}
	}
}

func TestOverridesOverHTTP(t *testing.T) {
	t.Parallel()
	h := newHarness(t, opsConfig, false)
	put := h.do("PUT", "/v1/limit-overrides/team/batch", "", `{"subject":{"team":"b"},"limits":[{"quota":1,"window":"1h"}]}`)
	if put.status != 200 {
		t.Fatalf("put: %d %s", put.status, put.raw)
	}
	h.do("POST", "/v1/limits/team/batch", "", `{"subject":{"team":"b"}}`)
	if r := h.do("POST", "/v1/limits/team/batch", "", `{"subject":{"team":"b"}}`); r.status != 429 {
		t.Errorf("second call under an override of 1: %d, want 429", r.status)
	}
	list := h.do("GET", "/v1/limit-overrides", "", "")
	if got := len(list.body["overrides"].([]any)); got != 3 {
		t.Errorf("list: %d overrides, want 3 (one dynamic, the vip and the unlimited policy): %s", got, list.raw)
	}
	if r := h.do("DELETE", "/v1/limit-overrides/team/batch", "", `{"subject":{"team":"b"}}`); r.body["deleted"] != true {
		t.Errorf("delete: %s", r.raw)
	}
	if r := h.do("POST", "/v1/limits/team/batch", "", `{"subject":{"team":"b"}}`); r.status != 200 {
		t.Errorf("after delete the policy's 5 apply: %d %s", r.status, r.raw)
	}
	if r := h.do("PUT", "/v1/limit-overrides/team/batch", "", `{"subject":{"team":"b"}}`); r.status != 400 {
		t.Errorf("override with nothing to set: %d, want 400", r.status)
	}
}

func itoa(n int) string {
	b := []byte{}
	for ; n > 0 || len(b) == 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}
