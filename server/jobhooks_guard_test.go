package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/server/config"
)

// privateHookURLs are webhook URLs whose host is, or resolves to, an
// address the SSRF guard refuses, in every form a host can take.
var privateHookURLs = []string{
	"http://127.0.0.1/", "http://127.0.0.1:8080/x", "https://127.255.255.254/",
	"http://10.0.0.1/", "http://172.16.0.1/", "http://192.168.1.1/",
	"http://169.254.169.254/latest/meta-data/", "http://169.254.1.1/", "http://0.0.0.0/",
	"http://100.64.0.1/", "http://224.0.0.1/", "http://198.18.0.1/",
	"http://[::1]/", "http://[::]/", "http://[::ffff:127.0.0.1]/", "http://[::ffff:10.0.0.1]/",
	"http://[::ffff:169.254.169.254]/", "http://[fd00:ec2::254]/", "http://[fc00::1]/",
	"http://[fe80::1]/", "http://[fe80::1%25eth0]/", "http://[ff02::1]/",
	"http://[64:ff9b::a9fe:a9fe]/", "http://[64:ff9b::7f00:1]/",
	"http://localhost/", "http://localhost:9000/hook", "http://internal.example/",
}

// resolveNames makes webhook host names resolve by names, for the test;
// any other name does not resolve.
func resolveNames(t *testing.T, names map[string]string) {
	webhookResolve = func(ctx context.Context, host string) ([]netip.Addr, error) {
		if a, ok := names[host]; ok {
			return []netip.Addr{netip.MustParseAddr(a)}, nil
		}
		return nil, errors.New("no such host")
	}
	t.Cleanup(func() { webhookResolve = nil })
}

// hookRoute is a route that takes a webhook: body puts url where the
// route takes it, and field is the API's name of that place.
type hookRoute struct {
	method, path string
	body         func(url string, i int) string
	field        string
}

func hookRoutes() []hookRoute {
	job := func(url string) string { return `{"queue":"q","kind":"k","webhook":{"url":"` + url + `"}}` }
	ok := "https://93.184.216.34/ok"
	return []hookRoute{
		{"POST", "/v1/jobs", func(u string, _ int) string { return job(u) }, "webhook.url"},
		{"POST", "/v1/jobs/batch", func(u string, _ int) string { return `{"jobs":[` + job(ok) + `,` + job(u) + `]}` }, "jobs[1].webhook.url"},
		{"POST", "/v1/groups", func(u string, i int) string { return fmt.Sprintf(`{"id":"g%d","webhook":{"url":%q}}`, i, u) }, "webhook.url"},
		{"POST", "/v1/flows", func(u string, _ int) string {
			return `{"nodes":[{"name":"a","job":` + job(ok) + `},{"name":"b","job":{"queue":"q","kind":"k"}},{"name":"c","job":` + job(u) + `}],
				"edges":[{"parent":"a","child":"c"}]}`
		}, "nodes[2].job.webhook.url"},
		{"PUT", "/v1/schedules/s%d", func(u string, _ int) string {
			return `{"every_ms":60000,"job":` + job(u) + `}`
		}, "job.webhook.url"},
	}
}

// TestWebhookGuardOnEveryRoute: every route that takes a webhook refuses
// each private URL form with a 400 naming the field where the route takes
// it, and stores nothing; a public address is taken on every route, and
// webhooks.allow_networks lets a private one in on every route.
func TestWebhookGuardOnEveryRoute(t *testing.T) {
	resolveNames(t, map[string]string{"localhost": "127.0.0.1", "internal.example": "10.9.8.7"})
	h := newOutboxHarness(t, config.Default(), Options{})
	for _, rt := range hookRoutes() {
		for i, u := range privateHookURLs {
			path := rt.path
			if strings.Contains(path, "%d") {
				path = fmt.Sprintf(path, i)
			}
			r := h.do(rt.method, path, "", rt.body(u, i))
			detail, _ := r.body["detail"].(string)
			if r.status != http.StatusBadRequest || !strings.HasPrefix(detail, rt.field+" ") {
				t.Errorf("%s %s with %s = %d %s; want 400 naming %s", rt.method, rt.path, u, r.status, r.raw, rt.field)
			}
		}
	}
	wantNothingStored(t, h, len(privateHookURLs))

	cfg := config.Default()
	cfg.Webhooks.AllowNetworks = []string{"127.0.0.1", "10.0.0.0/8"}
	allowed := newOutboxHarness(t, cfg, Options{})
	for _, rt := range hookRoutes() {
		for i, u := range []string{"https://93.184.216.34/h", "http://127.0.0.1:9/h", "http://internal.example/h"} {
			path := rt.path
			if strings.Contains(path, "%d") {
				path = fmt.Sprintf(path, i)
			}
			if r := allowed.do(rt.method, path, "", rt.body(u, i)); r.status >= 300 {
				t.Errorf("%s %s with %s (allowed) = %d %s", rt.method, rt.path, u, r.status, r.raw)
			}
		}
	}
	// A schedule's webhook reads back as it was stored.
	r := allowed.do("GET", "/v1/schedules/s1", "", "")
	if wh, _ := r.body["job"].(map[string]any)["webhook"].(map[string]any); wh["url"] != "http://127.0.0.1:9/h" {
		t.Errorf("GET schedule = %s; want its job's webhook", r.raw)
	}
}

// wantNothingStored checks that no job, schedule or group (g0…) is stored.
func wantNothingStored(t *testing.T, h *harness, groups int) {
	t.Helper()
	if r := h.do("GET", "/v1/jobs", "", ""); len(r.body["jobs"].([]any)) != 0 {
		t.Errorf("refused calls stored jobs: %s", r.raw)
	}
	if r := h.do("GET", "/v1/schedules", "", ""); len(r.body["schedules"].([]any)) != 0 {
		t.Errorf("refused calls stored schedules: %s", r.raw)
	}
	for i := range groups {
		if r := h.do("GET", fmt.Sprintf("/v1/groups/g%d", i), "", ""); r.status != http.StatusNotFound {
			t.Errorf("refused call stored group g%d: %d %s", i, r.status, r.raw)
		}
	}
}

// TestWebhookOffOnEveryRoute: with webhooks given with jobs off, every
// route that takes a webhook refuses it, naming the webhook.
func TestWebhookOffOnEveryRoute(t *testing.T) {
	cfg := config.Default()
	cfg.Webhooks.Jobs.Off = true
	h := newOutboxHarness(t, cfg, Options{})
	for _, rt := range hookRoutes() {
		path := strings.ReplaceAll(rt.path, "%d", "0")
		r := h.do(rt.method, path, "", rt.body("https://93.184.216.34/h", 0))
		detail, _ := r.body["detail"].(string)
		// The first webhook of the call is refused: each one of the bodies
		// above is off.
		field := strings.NewReplacer("[1]", "[0]", "[2]", "[0]").Replace(strings.TrimSuffix(rt.field, ".url"))
		if r.status != http.StatusBadRequest || !strings.HasPrefix(detail, field+" ") || !strings.Contains(detail, "webhooks.jobs.off") {
			t.Errorf("%s %s with webhooks.jobs.off = %d %s; want 400 naming %s and the setting", rt.method, rt.path, r.status, r.raw, field)
		}
	}
	wantNothingStored(t, h, 1)
}
