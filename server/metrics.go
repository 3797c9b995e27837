package server

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/server/dashboard"
)

// metrics are the server's Prometheus series. Label values come from the
// config (scenes, policies), the route table, or job fields (queue,
// tenant, state); never from a subject, so cardinality stays bounded by
// what the operator configured and enqueued. The tenant label is bounded
// further (tenantSeries): a producer that makes up tenant names adds no
// series beyond metrics.tenant_series.
type metrics struct {
	reg        *prometheus.Registry
	decisions  *prometheus.CounterVec
	storeLat   *prometheus.HistogramVec
	failures   *prometheus.CounterVec
	shadow     *prometheus.CounterVec
	requests   *prometheus.CounterVec
	reqLat     *prometheus.HistogramVec
	enqueued   *tenantVec
	finished   *tenantVec
	jobDur     *prometheus.HistogramVec
	startDelay *prometheus.HistogramVec
	deliveries *prometheus.CounterVec
	deliverLat *prometheus.HistogramVec
	releases   *prometheus.CounterVec
	// tenants bounds the tenant label of enqueued and finished.
	tenants *tenantSeries
	// activity keeps the last minute per second for the dashboard.
	activity *dashboard.Activity
}

func newMetrics(reg *prometheus.Registry) *metrics {
	if reg == nil {
		reg = prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	m := &metrics{reg: reg, tenants: newTenantSeries()}
	m.decisions = counter(reg, "sluice_limit_decisions_total", "Rate-limit decisions by scene, policy and outcome (allowed, denied, shadow_denied, failure_open, failure_closed, invalid).", "scene", "policy", "outcome")
	m.storeLat = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "sluice_limit_store_seconds", Help: "Time spent in the rate-limit store per decision.", Buckets: []float64{.00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25}}, []string{"scene"})
	m.failures = counter(reg, "sluice_limit_failure_mode_total", "Decisions answered by the failure mode because the store failed.", "scene", "policy", "mode")
	m.shadow = counter(reg, "sluice_limit_shadow_denials_total", "Denials allowed because the scene is in shadow mode.", "scene", "policy")
	m.requests = counter(reg, "sluice_http_requests_total", "HTTP requests by route and status code.", "route", "code")
	m.reqLat = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "sluice_http_request_seconds", Help: "HTTP request latency by route.", Buckets: prometheus.DefBuckets}, []string{"route"})
	m.enqueued = newTenantVec(reg, m.tenants, "sluice_jobs_enqueued_total", "Jobs enqueued through the API, by queue and tenant (the busiest tenants; the others as tenant=\"_other\").", "queue", "tenant")
	m.finished = newTenantVec(reg, m.tenants, "sluice_jobs_finished_total", "Job attempts ended through the worker protocol, by queue, tenant (as in sluice_jobs_enqueued_total) and resulting state.", "queue", "tenant", "state")
	m.jobDur = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "sluice_job_duration_seconds", Help: "Time from a job's start to the end of its attempt.", Buckets: prometheus.ExponentialBuckets(0.001, 4, 12)}, []string{"queue"})
	m.startDelay = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "sluice_job_start_delay_seconds", Help: "Time from a job being due (enqueue or run_at) to its start.", Buckets: prometheus.ExponentialBuckets(0.001, 4, 12)}, []string{"queue"})
	m.deliveries = counter(reg, "sluice_webhook_deliveries_total", "Webhook delivery attempts by subscription, event type and outcome.", "subscription", "event", "outcome")
	m.deliverLat = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "sluice_webhook_delivery_seconds", Help: "Time one webhook delivery attempt took, response included.", Buckets: prometheus.ExponentialBuckets(0.005, 4, 8)}, []string{"subscription"})
	m.releases = counter(reg, "sluice_limit_releases_total", "In-flight lease releases by scene, policy and outcome (released, not_held: expired or released before, error).", "scene", "policy", "outcome")
	reg.MustRegister(m.storeLat, m.reqLat, m.jobDur, m.startDelay, m.deliverLat)
	return m
}

func counter(reg *prometheus.Registry, name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	reg.MustRegister(c)
	return c
}

// observeLimit is the ratelimit Observer of every scene's Limiter.
func (m *metrics) observeLimit(ev ratelimit.Event) {
	if ev.Release {
		m.observeRelease(ev)
		return
	}
	outcome := "allowed"
	switch {
	case ev.FailureModeApplied && ev.Allowed:
		outcome = "failure_open"
		m.failures.WithLabelValues(ev.Scene, ev.Policy, "open").Inc()
	case ev.FailureModeApplied:
		outcome = "failure_closed"
		m.failures.WithLabelValues(ev.Scene, ev.Policy, "closed").Inc()
	case ev.Err != nil:
		outcome = "invalid"
	case !ev.Decision.Allowed && ev.Allowed:
		outcome = "shadow_denied"
		m.shadow.WithLabelValues(ev.Scene, ev.Policy).Inc()
	case !ev.Allowed:
		outcome = "denied"
	}
	m.decisions.WithLabelValues(ev.Scene, ev.Policy, outcome).Inc()
	m.storeLat.WithLabelValues(ev.Scene).Observe(ev.Latency.Seconds())
	m.activity.ObserveLimit(ev)
}

// observeRelease counts a lease release; it is not a decision, so the
// decision series and the dashboard's activity leave it out.
func (m *metrics) observeRelease(ev ratelimit.Event) {
	outcome := "released"
	switch {
	case ev.Err != nil:
		outcome = "error"
	case !ev.Allowed:
		outcome = "not_held"
	}
	m.releases.WithLabelValues(ev.Scene, ev.Policy, outcome).Inc()
	m.storeLat.WithLabelValues(ev.Scene).Observe(ev.Latency.Seconds())
}

// instrument counts requests by route pattern (never the raw path).
func (m *metrics) instrument(route string, h http.Handler) http.Handler {
	lat := m.reqLat.WithLabelValues(route)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		h.ServeHTTP(sw, r)
		lat.Observe(time.Since(start).Seconds())
		m.requests.WithLabelValues(route, strconv.Itoa(sw.code)).Inc()
	})
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// statusWriter remembers the status code for metrics and logs.
type statusWriter struct {
	http.ResponseWriter
	code  int
	wrote bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.code, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// watchQueue exports the queue's per-state job counts, read from the
// backend's indexes at scrape time.
func (m *metrics) watchQueue(c *queue.Client) {
	m.reg.MustRegister(&queueCollector{c: c, desc: prometheus.NewDesc("sluice_jobs", "Jobs by queue and state, read from the backend at scrape time.", []string{"queue", "state"}, nil)})
}

type queueCollector struct {
	c    *queue.Client
	desc *prometheus.Desc
}

func (q *queueCollector) Describe(ch chan<- *prometheus.Desc) { ch <- q.desc }

func (q *queueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	stats, err := q.c.Stats(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(q.desc, err)
		return
	}
	for _, s := range stats {
		for _, state := range queue.States {
			ch <- prometheus.MustNewConstMetric(q.desc, prometheus.GaugeValue, float64(s.Counts[state]), s.Queue, string(state))
		}
	}
}

// jobStarted and jobEnded feed the job latency series from the worker
// protocol.
func (m *metrics) jobStarted(j *queue.Job) {
	if j.StartedAt.IsZero() {
		return
	}
	due := j.CreatedAt
	if j.RunAt.After(due) {
		due = j.RunAt
	}
	if d := j.StartedAt.Sub(due); d >= 0 {
		m.startDelay.WithLabelValues(j.Queue).Observe(d.Seconds())
		m.activity.JobStarted(j.Queue, d)
	}
}

func (m *metrics) jobEnded(j *queue.Job, state queue.State, now time.Time) {
	m.finished.WithLabelValues(j.Queue, j.Tenant, string(state)).Inc()
	m.activity.JobEnded(j.Queue, state)
	if !j.StartedAt.IsZero() {
		m.jobDur.WithLabelValues(j.Queue).Observe(now.Sub(j.StartedAt).Seconds())
	}
}

// observeDelivery is the webhook dispatcher's OnDelivery hook.
func (m *metrics) observeDelivery(d backend.Delivery) {
	m.deliveries.WithLabelValues(d.Subscription, string(d.EventType), string(d.Outcome)).Inc()
	m.deliverLat.WithLabelValues(d.Subscription).Observe(d.Latency.Seconds())
}
