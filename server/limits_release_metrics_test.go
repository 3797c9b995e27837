package server

import (
	"strings"
	"testing"
)

func TestReleaseCountedInMetrics(t *testing.T) {
	t.Parallel()
	h := newHarness(t, opsConfig, false)
	a := h.do("POST", "/v1/limits/team/export/acquire", "", `{"subject":{"team":"a"}}`)
	if a.status != 200 {
		t.Fatalf("acquire: %d %s", a.status, a.raw)
	}
	rel := `{"subject":{"team":"a"},"lease_id":"` + a.body["lease"].(map[string]any)["id"].(string) + `"}`
	for range 2 {
		h.do("POST", "/v1/limits/team/export/release", "", rel)
	}
	m := h.do("GET", "/metrics", "", "")
	for _, want := range []string{
		`sluice_limit_releases_total{outcome="released",policy="export",scene="team"} 1`,
		`sluice_limit_releases_total{outcome="not_held",policy="export",scene="team"} 1`,
		`sluice_limit_decisions_total{outcome="allowed",policy="export",scene="team"} 1`,
	} {
		if !strings.Contains(m.raw, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}
