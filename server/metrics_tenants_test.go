package server

import (
	"fmt"
	"log/slog"
	"maps"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/keyspace"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/redisqueue"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
	"github.com/sluicehq/sluice/ratelimit/memlimit"
	"github.com/sluicehq/sluice/server/config"
)

func TestChooseTenantSeries(t *testing.T) {
	t.Parallel()
	set := func(names ...string) map[string]bool {
		m := map[string]bool{}
		for _, n := range names {
			m[n] = true
		}
		return m
	}
	cases := []struct {
		name    string
		current map[string]bool
		ranked  []string
		limit   int
		want    []string
	}{
		{"empty", set(), nil, 3, nil},
		{"busiest fill free slots", set(), []string{"c", "a", "b", "d"}, 3, []string{"a", "b", "c"}},
		{"current among the busiest stay", set("d", "x"), []string{"a", "b", "c", "d"}, 2, []string{"a", "d"}},
		{"current outside the busiest go first", set("q", "r"), []string{"a", "b"}, 3, []string{"a", "b", "q"}},
		{"quiet current ones stay while slots are free", set("q", "r"), []string{"a"}, 3, []string{"a", "q", "r"}},
		{"store fault keeps current ones by name", set("z", "y", "x"), nil, 2, []string{"x", "y"}},
		{"never the catch-all or no tenant", set(), []string{otherTenant, "", "a"}, 3, []string{"a"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := slices.Sorted(func(yield func(string) bool) {
				for n := range choose(tc.current, tc.ranked, tc.limit) {
					if !yield(n) {
						return
					}
				}
			})
			if !slices.Equal(got, tc.want) {
				t.Errorf("choose(%v, %v, %d) = %v, want %v", tc.current, tc.ranked, tc.limit, got, tc.want)
			}
		})
	}
}

// metricsHarness is a server with a job store and a fake clock that
// /metrics reads its refresh times from.
type metricsHarness struct {
	*harness
}

// openTestQueue opens the job store named: "embedded" (SQLite in a temp
// dir) or "redis" (real Redis with SLUICE_REDIS_URL, else miniredis).
func openTestQueue(t *testing.T, store string) backend.Backend {
	t.Helper()
	if store == "embedded" {
		b, err := sqlitequeue.Open(filepath.Join(t.TempDir(), "jobs.db"), sqlitequeue.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}
	opts, prefix, ok := redistest.Real(t)
	if !ok {
		opts, prefix = &redis.Options{Addr: miniredis.RunT(t).Addr()}, keyspace.Prefix("sluice:")
	}
	client := redis.NewClient(opts)
	t.Cleanup(func() { client.Close() })
	b, err := redisqueue.New(client, redisqueue.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func newMetricsHarness(t *testing.T, store, doc string) *metricsHarness {
	t.Helper()
	cfg, err := config.Parse([]byte(doc), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	store2 := memlimit.New(memlimit.Options{Clock: clk, SweepInterval: -1})
	t.Cleanup(func() { store2.Close() })
	srv, err := New(Options{Config: cfg, Limits: store2, Queue: openTestQueue(t, store), Logger: slog.New(slog.DiscardHandler), Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return &metricsHarness{&harness{t: t, srv: srv, http: hs, clk: clk}}
}

// enqueue adds n jobs for each tenant in one batch and returns their ids.
func (h *metricsHarness) enqueue(n int, tenants ...string) []string {
	h.t.Helper()
	var specs []string
	for _, tenant := range tenants {
		for range n {
			specs = append(specs, fmt.Sprintf(`{"queue":"q","kind":"k","tenant":%q}`, tenant))
		}
	}
	r := h.do("POST", "/v1/jobs/batch", "", `{"jobs":[`+strings.Join(specs, ",")+`]}`)
	if r.status != 201 && r.status != 200 {
		h.t.Fatalf("batch: %d %s", r.status, r.raw)
	}
	var ids []string
	for _, e := range r.body["jobs"].([]any) {
		ids = append(ids, e.(map[string]any)["job"].(map[string]any)["id"].(string))
	}
	return ids
}

var seriesLine = regexp.MustCompile(`^(sluice_jobs_(?:enqueued|finished)_total)\{(.*)\} (\S+)$`)
var tenantLabel = regexp.MustCompile(`tenant="([^"]*)"`)

// scrape reads /metrics and returns, per metric with a tenant label, the
// total by tenant label value.
func (h *metricsHarness) scrape() map[string]map[string]float64 {
	h.t.Helper()
	r := h.do("GET", "/metrics", "", "")
	if r.status != 200 {
		h.t.Fatalf("/metrics: %d %s", r.status, r.raw)
	}
	out := map[string]map[string]float64{}
	for _, line := range strings.Split(r.raw, "\n") {
		m := seriesLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			h.t.Fatalf("%s: %v", line, err)
		}
		if out[m[1]] == nil {
			out[m[1]] = map[string]float64{}
		}
		out[m[1]][tenantLabel.FindStringSubmatch(m[2])[1]] += v
	}
	return out
}

func seriesKeys(m map[string]float64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func seriesSum(m map[string]float64) float64 {
	var s float64
	for _, v := range m {
		s += v
	}
	return s
}

// 200 tenants, 10 series: every scrape shows at most 11 tenant values
// (10 and _other) in every series with a tenant label, and no job goes
// uncounted.
func TestMetricsTenantLabelBounded(t *testing.T) {
	t.Parallel()
	for _, store := range []string{"embedded", "redis"} {
		t.Run(store, func(t *testing.T) {
			t.Parallel()
			h := newMetricsHarness(t, store, "metrics:\n  tenant_series: 10\n")
			tenants := make([]string, 200)
			for i := range tenants {
				tenants[i] = fmt.Sprintf("t%03d", i)
			}
			h.enqueue(1, tenants...)
			// Finish one job of 30 tenants through the worker protocol.
			r := h.do("POST", "/v1/worker/lease", "", `{"queues":["q"],"worker_id":"w","max":30}`)
			leases, _ := r.body["leases"].([]any)
			if len(leases) != 30 {
				t.Fatalf("lease: %d %s", r.status, r.raw)
			}
			for _, l := range leases {
				lease := l.(map[string]any)
				id := lease["job"].(map[string]any)["id"].(string)
				if r := h.do("POST", "/v1/worker/jobs/"+id+"/complete", "", fmt.Sprintf(`{"token":%q}`, lease["token"])); r.status != 200 {
					t.Fatalf("complete: %d %s", r.status, r.raw)
				}
			}
			for round := range 3 {
				before := h.scrape() // chooses the tenants with series when due
				h.enqueue(1, tenants[150:]...)
				got := h.scrape()
				for _, name := range []string{"sluice_jobs_enqueued_total", "sluice_jobs_finished_total"} {
					if n := len(got[name]); n > 11 || len(before[name]) > 11 {
						t.Fatalf("round %d: %s has %d then %d tenant values, want at most 11:\n%v", round, name, len(before[name]), n, seriesKeys(got[name]))
					}
					if got[name][otherTenant] == 0 {
						t.Errorf("round %d: %s has no %s series: %v", round, name, otherTenant, seriesKeys(got[name]))
					}
				}
				if d := seriesSum(got["sluice_jobs_enqueued_total"]) - seriesSum(before["sluice_jobs_enqueued_total"]); d != 50 {
					t.Errorf("round %d: 50 jobs enqueued, the series grew by %v", round, d)
				}
				h.clk.Advance(tenantRefreshEvery)
			}
		})
	}
}

// The busiest tenants take the slots of tenants that have fallen out of
// the busiest 2×N; a tenant that keeps its place keeps its series.
func TestMetricsTenantSeriesFollowBusiest(t *testing.T) {
	t.Parallel()
	h := newMetricsHarness(t, "embedded", "metrics:\n  tenant_series: 4\n")
	// First come: a, b, c, d take the four slots.
	ids := h.enqueue(1, "a", "b", "c", "d", "e", "f", "g", "h")
	h.enqueue(5, "busy")
	if got, want := seriesKeys(h.scrape()["sluice_jobs_enqueued_total"]), []string{"_other", "a", "b", "c", "d"}; !slices.Equal(got, want) {
		t.Fatalf("first scrape: %v, want %v", got, want)
	}
	// a and b finish: they leave the tenant list; busy (backlog 5) and e
	// (first by name among the rest) take their slots at the next
	// refresh, not before.
	for _, id := range ids[:2] {
		if r := h.do("POST", "/v1/jobs/"+id+"/cancel", "", ""); r.status != 200 {
			t.Fatalf("cancel: %d %s", r.status, r.raw)
		}
	}
	if got, want := seriesKeys(h.scrape()["sluice_jobs_enqueued_total"]), []string{"_other", "a", "b", "c", "d"}; !slices.Equal(got, want) {
		t.Fatalf("before the refresh interval: %v, want %v", got, want)
	}
	h.clk.Advance(tenantRefreshEvery)
	if got, want := seriesKeys(h.scrape()["sluice_jobs_enqueued_total"]), []string{"_other", "c", "d"}; !slices.Equal(got, want) {
		t.Fatalf("after the refresh: %v, want %v (a and b removed)", got, want)
	}
	h.enqueue(1, "busy", "e", "f", "a")
	want := map[string]float64{"_other": 11, "busy": 1, "c": 1, "d": 1, "e": 1}
	if got := h.scrape()["sluice_jobs_enqueued_total"]; !maps.Equal(got, want) {
		t.Fatalf("new slots: %v, want %v", got, want)
	}
	// Nothing changed much: the next refresh keeps every series.
	h.clk.Advance(tenantRefreshEvery)
	if got := h.scrape()["sluice_jobs_enqueued_total"]; !maps.Equal(got, want) {
		t.Fatalf("stable: %v, want %v", got, want)
	}
}

// A reload that lowers metrics.tenant_series trims the series at the next
// scrape.
func TestMetricsTenantSeriesReload(t *testing.T) {
	t.Parallel()
	h := newMetricsHarness(t, "embedded", "")
	h.enqueue(1, "a", "b", "c", "d", "e")
	if got := seriesKeys(h.scrape()["sluice_jobs_enqueued_total"]); len(got) != 5 {
		t.Fatalf("default bound: %v, want the five tenants", got)
	}
	cfg, err := config.Parse([]byte("metrics:\n  tenant_series: 2\n"), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.srv.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	h.enqueue(1, "f")
	if got, want := seriesKeys(h.scrape()["sluice_jobs_enqueued_total"]), []string{"_other", "a", "b"}; !slices.Equal(got, want) {
		t.Fatalf("after the reload: %v, want %v", got, want)
	}
}
