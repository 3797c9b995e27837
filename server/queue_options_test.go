package server

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/server/config"
)

// everyQueueKey uses every key under queues: that the server applies
// (placement on other backends aside: it needs a broker), each with a
// value that differs from its default, so that the test below can tell
// whether it reached the running server. DATA and CGROUP are replaced by
// temporary directories, HOOK by a webhook receiver's URL; BASE and MEM
// by the values a reload changes. The Redis tuning keys are checked on a
// Redis deployment (TestEveryStorageKeyReachesTheStores).
const everyQueueKey = `
server:
  listen: 127.0.0.1:0
storage:
  data_dir: DATA
  sqlite: {busy_timeout: 7s, read_conns: 2, durable: true}
  memory_limits: {shards: 8, max_keys: 100000, sweep_interval: 1h}
  redis_queue: {disable_batching: true, max_batch: 9, senders: 3, complete_linger: 5ms, enqueue_linger: 3ms}
  redis_limits: {disable_batching: true, max_batch: 11, pipelines: 5, deny_cache: true, deny_cache_size: 99}
  redis_breaker: {failures: 1, probe_interval: 1h}
  postgres: {schema: jobs, max_conns: 3, skip_migrate: true}
webhooks:
  allow_networks: [127.0.0.1]
  subscriptions:
    - {name: fail, url: HOOK/fail, events: [job.cancelled]}
    - {name: slow, url: HOOK/slow, events: [job.cancelled]}
  delivery:
    timeout: 100ms
    max_attempts: 2
    backoff: {base: 10ms, max: 20ms}
    concurrency: 4
    lease_for: 1m
    poll_interval: 10ms
    shutdown_timeout: 1s
    log_retention: 48h
    host_rate: {calls: 1000, per: 1s}
queues:
  lease: 45s
  max_payload_bytes: 2048
  max_depth: 100
  max_attempts: 7
  max_stalls: 4
  backoff: {base: 20m, max: 2h}
  rescue_every: 50ms
  cleanup: {interval: 50ms, batch: 10}
  admission: {depth_cache_for: 1ms, retry_after: 9s}
  retention: {completed: 1h, failed: 2h, cancelled: 3h}
  tenants:
    default: {concurrency: 5, weight: 1, backlog_cap: 1000, max_wait: 1h}
    overrides:
      big: {concurrency: 200, weight: 3, backlog_cap: 5000, max_wait: 2h}
  per_queue:
    short:
      lease: 7m
      max_attempts: 3
      backoff: {base: 90m, max: 3h}
      retention: {completed: 1ms, failed: 1ms, cancelled: 1ms}
      aging: 50
    stall: {max_stalls: 1}
    capped: {max_depth: 2}
  start_rates:
    tenant: {quota: 2, window: 1h, algorithm: token-bucket, burst: 2}
    tenants:
      free: {}
      other: {quota: 50, window: 1h, algorithm: token-bucket, burst: 60}
    group: {quota: 1, window: 1h, algorithm: token-bucket, burst: 1}
    groups: {crawl: {quota: 5, window: 1h, algorithm: token-bucket, burst: 5}}
    queue: {quota: 1000, window: 1h, algorithm: token-bucket, burst: 1000}
    queues:
      rated: {quota: 1, window: 1h, algorithm: sliding-window}
      bursty: {quota: 10, window: 1s, algorithm: token-bucket, burst: 20}
  priority:
    enabled: true
    base: BASE
    window: 1h
    default_tier: tiny
    tiers: {tiny: {bucket: 1, modifier: 2}}
    tenants: {vip: enterprise}
    by_concurrency: [{min: 100, tier: growth}]
  overload:
    enabled: true
    cpu: -1
    memory: MEM
    hysteresis: 0.02
    interval: 20ms
    source: cgroup
    cgroup_dir: CGROUP
    cpus: 2
    memory_total: 1000
    pause_leasing: true
  groups:
    max_concurrency: 4
    min_interval: 250ms
    ttl: 1h
    completion_queue: reports
  events: {disabled: false, retention: 2h, max_events: 5000}
`

// paritySetup is a running server on everyQueueKey.
type paritySetup struct {
	t                          *testing.T
	base, file, data, cg, hook string
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil { // atomic: readers never see half a file
		t.Fatal(err)
	}
}

func (p *paritySetup) writeConfig(base, mem string) {
	doc := strings.NewReplacer("DATA", p.data, "CGROUP", p.cg, "HOOK", p.hook, "BASE", base, "MEM", mem).Replace(everyQueueKey)
	writeFile(p.t, p.file, doc)
}

// setMemory makes the cgroup the monitor reads use used of 1000 bytes.
func (p *paritySetup) setMemory(used int) {
	writeFile(p.t, filepath.Join(p.cg, "memory.current"), fmt.Sprint(used))
}

func startParity(t *testing.T) *paritySetup {
	dir := t.TempDir()
	p := &paritySetup{t: t, file: filepath.Join(dir, "sluice.yaml"), data: filepath.Join(dir, "data"), cg: filepath.Join(dir, "cgroup")}
	if err := os.MkdirAll(p.cg, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(p.cg, "cpu.stat"), "usage_usec 1000\n")
	writeFile(t, filepath.Join(p.cg, "memory.max"), "max")
	p.setMemory(100)
	p.hook = webhookReceiver(t)
	p.writeConfig("7", "0.85")
	cfg, err := config.Load(p.file)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addr, done := make(chan string, 1), make(chan error, 1)
	go func() {
		done <- Run(ctx, RunOptions{Config: cfg, ConfigPath: p.file, Logger: slog.New(slog.DiscardHandler), Listening: func(h, _ string) { addr <- h }})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	select {
	case a := <-addr:
		p.base = "http://" + a
	case err := <-done:
		t.Fatalf("Run: %v", err)
	}
	return p
}

func (p *paritySetup) call(method, path, body string) reply {
	p.t.Helper()
	return outageCall(p.t, p.base, method, path, body)
}

func (p *paritySetup) enqueue(body string) map[string]any {
	p.t.Helper()
	r := p.call("POST", "/v1/jobs", body)
	if r.status != 201 {
		p.t.Fatalf("enqueue %s: %d %s", body, r.status, r.raw)
	}
	return r.body["job"].(map[string]any)
}

// lease leases up to max jobs of queue, with the server's default lease.
func (p *paritySetup) lease(queues string, max int) []map[string]any {
	p.t.Helper()
	r := p.call("POST", "/v1/worker/lease", fmt.Sprintf(`{"queues":[%s],"worker_id":"w","max":%d}`, queues, max))
	if r.status != 200 {
		p.t.Fatalf("lease %s: %d %s", queues, r.status, r.raw)
	}
	var out []map[string]any
	for _, l := range r.body["leases"].([]any) {
		out = append(out, l.(map[string]any))
	}
	return out
}

func jobOf(l map[string]any) map[string]any { return l["job"].(map[string]any) }

func timeField(t *testing.T, m map[string]any, key string) time.Time {
	t.Helper()
	s, _ := m[key].(string)
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("%s: %q: %v", key, s, err)
	}
	return v
}

// within fails unless got is within [lo, hi] from now.
func within(t *testing.T, what string, got time.Time, lo, hi time.Duration) {
	t.Helper()
	if d := time.Until(got); d < lo || d > hi {
		t.Errorf("%s: %s from now, want %s to %s", what, d.Round(time.Second), lo, hi)
	}
}

// TestEveryQueueKeyReachesTheServer starts a real server (Run, embedded
// store, config file watched) on a config that uses every queue key, and
// checks each value by the server's behaviour.
func TestEveryQueueKeyReachesTheServer(t *testing.T) {
	p := startParity(t)

	t.Run("attempts", func(t *testing.T) {
		if got := p.enqueue(`{"queue":"plain","kind":"k"}`)["max_attempts"]; got != 7.0 {
			t.Errorf("queues.max_attempts: got %v, want 7", got)
		}
		if got := p.enqueue(`{"queue":"short","kind":"k"}`)["max_attempts"]; got != 3.0 {
			t.Errorf("per_queue.short.max_attempts: got %v, want 3", got)
		}
		if got := p.enqueue(`{"queue":"short","kind":"k","max_attempts":9}`)["max_attempts"]; got != 9.0 {
			t.Errorf("a job's own max_attempts: got %v, want 9", got)
		}
	})
	t.Run("lease and backoff", func(t *testing.T) { parityLeaseBackoff(t, p) })
	t.Run("stalls", func(t *testing.T) { parityStalls(t, p) })
	t.Run("retention", func(t *testing.T) { parityRetention(t, p) })
	t.Run("admission", func(t *testing.T) {
		if r := p.call("POST", "/v1/jobs", `{"queue":"plain","kind":"k","payload":"`+strings.Repeat("x", 3000)+`"}`); r.status != 400 {
			t.Errorf("max_payload_bytes 2048, 3000-byte payload: %d %s", r.status, r.raw)
		}
		p.enqueue(`{"queue":"capped","kind":"k"}`)
		p.enqueue(`{"queue":"capped","kind":"k"}`)
		r := p.call("POST", "/v1/jobs", `{"queue":"capped","kind":"k"}`)
		if r.status != 503 || r.header.Get("Retry-After") != "9" {
			t.Errorf("per_queue.capped.max_depth 2 with admission.retry_after 9s, third job: %d Retry-After %q %s", r.status, r.header.Get("Retry-After"), r.raw)
		}
		jobs := strings.TrimSuffix(strings.Repeat(`{"queue":"wide","kind":"k"},`, 101), ",")
		if r := p.call("POST", "/v1/jobs/batch", `{"jobs":[`+jobs+`]}`); r.status != 400 || !strings.Contains(r.raw, "depth cap 100") {
			t.Errorf("queues.max_depth 100, batch of 101: %d %s", r.status, r.raw)
		}
	})
	t.Run("tenants", func(t *testing.T) {
		r := p.call("GET", "/v1/tenants/big", "")
		eff, _ := r.body["effective"].(map[string]any)
		if eff["limit"] != 200.0 || eff["weight"] != 3.0 || eff["backlog"] != 5000.0 || eff["max_wait_ms"] != 7200000.0 {
			t.Errorf("tenants: %s", r.raw)
		}
	})
	t.Run("groups", func(t *testing.T) {
		r := p.call("POST", "/v1/groups", `{"id":"g-defaults","completion_kind":"report"}`)
		b := r.body
		if r.status != 201 || b["max_concurrency"] != 4.0 || b["min_interval_ms"] != 250.0 || b["ttl_ms"] != 3600000.0 || b["completion_queue"] != "reports" {
			t.Errorf("queues.groups defaults: %d %s", r.status, r.raw)
		}
		r = p.call("POST", "/v1/groups", `{"id":"g-own","max_concurrency":9,"min_interval_ms":5}`)
		if r.body["max_concurrency"] != 9.0 || r.body["min_interval_ms"] != 5.0 {
			t.Errorf("a group's own settings: %s", r.raw)
		}
	})
	t.Run("events", func(t *testing.T) { parityEvents(t, p) }) // watch_test.go
	t.Run("start rates", func(t *testing.T) { parityStartRates(t, p) })
	t.Run("priority", func(t *testing.T) { parityPriority(t, p, 7) })
	t.Run("aging", func(t *testing.T) {
		db, err := sql.Open("sqlite", "file:"+filepath.Join(p.data, "jobs.db")+"?mode=ro")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		testutil.Eventually(t, "aging step of queue short written", func() error {
			var step int
			err := db.QueryRow(`SELECT aging FROM queue_sched WHERE queue = 'short'`).Scan(&step)
			if err == nil && step != 50 {
				err = fmt.Errorf("aging %d, want 50", step)
			}
			return err
		})
	})
	t.Run("overload", func(t *testing.T) { parityOverload(t, p) })
	t.Run("webhook delivery", func(t *testing.T) { parityWebhooks(t, p) })
	t.Run("reload", func(t *testing.T) {
		// Base 7 → 0 and the memory threshold 0.85 → 0.95 while memory
		// stays at 90%: the new values must show without a restart.
		p.setMemory(900)
		testutil.Eventually(t, "overloaded at 90% memory", func() bool {
			return p.call("POST", "/v1/jobs", `{"queue":"plain","kind":"k"}`).status == 503
		})
		p.writeConfig("0", "0.95") // an explicit 0, not the default 10
		testutil.Eventually(t, "enqueues admitted under the new threshold", func() bool {
			return p.call("POST", "/v1/jobs", `{"queue":"plain","kind":"k"}`).status == 201
		})
		if got := p.enqueue(`{"queue":"prio","kind":"k","tenant":"vip2"}`)["priority"]; got != 0.0 {
			t.Errorf("reloaded priority.base 0: got %v, want 0", got)
		}
	})
}

func parityLeaseBackoff(t *testing.T, p *paritySetup) {
	p.enqueue(`{"queue":"lb-short","kind":"k"}`) // not in per_queue: the queues-wide values
	ls := p.lease(`"lb-short"`, 1)
	if len(ls) != 1 {
		t.Fatalf("leased %d", len(ls))
	}
	within(t, "queues.lease 45s", timeField(t, jobOf(ls[0]), "lease_until"), 40*time.Second, 50*time.Second)

	p.enqueue(`{"queue":"short","kind":"k2"}`)
	p.enqueue(`{"queue":"lb-plain","kind":"k2"}`)
	ls = p.lease(`"short","lb-plain"`, 10)
	var short map[string]any
	for _, l := range ls {
		j := jobOf(l)
		switch j["queue"] {
		case "short":
			if j["kind"] == "k2" {
				short = l
				within(t, "per_queue.short.lease 7m", timeField(t, j, "lease_until"), 6*time.Minute, 8*time.Minute)
			}
		case "lb-plain":
			within(t, "queues.lease 45s beside a 7m queue", timeField(t, j, "lease_until"), 40*time.Second, 50*time.Second)
		}
	}
	if short == nil {
		t.Fatalf("no job of short leased: %v", ls)
	}
	id, tok := jobOf(short)["id"].(string), short["token"].(string)
	r := p.call("POST", "/v1/worker/jobs/"+id+"/heartbeat", `{"token":"`+tok+`"}`)
	within(t, "heartbeat on per_queue.short.lease 7m", timeField(t, r.body, "lease_until"), 6*time.Minute, 8*time.Minute)
	r = p.call("POST", "/v1/worker/jobs/"+id+"/fail", `{"token":"`+tok+`","error":"boom"}`)
	if r.status != 200 {
		t.Fatalf("fail: %d %s", r.status, r.raw)
	}
	j := p.call("GET", "/v1/jobs/"+id, "").body
	within(t, "per_queue.short.backoff base 90m, first retry", timeField(t, j, "run_at"), 44*time.Minute, 91*time.Minute)

	lb := jobOf(ls[0])
	for _, l := range ls {
		if jobOf(l)["queue"] == "lb-plain" {
			lb = jobOf(l)
			r = p.call("POST", "/v1/worker/jobs/"+lb["id"].(string)+"/fail", `{"token":"`+l["token"].(string)+`","error":"boom"}`)
		}
	}
	j = p.call("GET", "/v1/jobs/"+lb["id"].(string), "").body
	within(t, "queues.backoff base 20m, first retry", timeField(t, j, "run_at"), 9*time.Minute, 21*time.Minute)
}

func parityStalls(t *testing.T, p *paritySetup) {
	a := p.enqueue(`{"queue":"stall","kind":"k"}`)["id"].(string)
	b := p.enqueue(`{"queue":"stall-wide","kind":"k"}`)["id"].(string)
	for _, q := range []string{"stall", "stall-wide"} {
		r := p.call("POST", "/v1/worker/lease", `{"queues":["`+q+`"],"worker_id":"w","lease_ms":1}`)
		if r.status != 200 || len(r.body["leases"].([]any)) != 1 {
			t.Fatalf("lease %s: %s", q, r.raw)
		}
	}
	testutil.Eventually(t, "per_queue.stall.max_stalls 1 fails the job at its first stall", func() error {
		j := p.call("GET", "/v1/jobs/"+a, "").body
		if j["state"] != "failed" {
			return fmt.Errorf("state %v stalls %v", j["state"], j["stalls"])
		}
		return nil
	})
	testutil.Eventually(t, "queues.max_stalls 4 requeues the job at its first stall", func() error {
		j := p.call("GET", "/v1/jobs/"+b, "").body
		if j["state"] != "pending" || j["stalls"] != 1.0 {
			return fmt.Errorf("state %v stalls %v", j["state"], j["stalls"])
		}
		return nil
	})
}

func parityRetention(t *testing.T, p *paritySetup) {
	var ids []string
	for _, q := range []string{"short", "keep"} {
		p.enqueue(`{"queue":"` + q + `","kind":"done"}`)
		var l map[string]any
		for _, c := range p.lease(`"`+q+`"`, 10) {
			if jobOf(c)["kind"] == "done" {
				l = c
			}
		}
		if l == nil {
			t.Fatalf("no done job leased from %s", q)
		}
		id := jobOf(l)["id"].(string)
		if r := p.call("POST", "/v1/worker/jobs/"+id+"/complete", `{"token":"`+l["token"].(string)+`"}`); r.status != 200 {
			t.Fatalf("complete: %s", r.raw)
		}
		ids = append(ids, id)
	}
	testutil.Eventually(t, "per_queue.short.retention 1ms deletes its completed job", func() bool {
		return p.call("GET", "/v1/jobs/"+ids[0], "").status == 404
	})
	if r := p.call("GET", "/v1/jobs/"+ids[1], ""); r.status != 200 {
		t.Errorf("queues.retention.completed 1h kept nothing: %d %s", r.status, r.raw)
	}
}

func parityStartRates(t *testing.T, p *paritySetup) {
	count := func(queue, body string, n int) int {
		for range n {
			p.enqueue(body)
		}
		return len(p.lease(`"`+queue+`"`, 10))
	}
	if got := count("sr-tenant", `{"queue":"sr-tenant","kind":"k","tenant":"someone"}`, 3); got != 2 {
		t.Errorf("start_rates.tenant 2/h: %d of 3 started, want 2", got)
	}
	if r := p.call("GET", "/v1/tenants/someone", ""); r.body["paused_until"] == nil {
		t.Errorf("tenant over its start rate not paused: %s", r.raw)
	}
	if got := count("sr-free", `{"queue":"sr-free","kind":"k","tenant":"free"}`, 3); got != 3 {
		t.Errorf("start_rates.tenants.free {} lifts the rate: %d of 3 started", got)
	}
	if got := count("rated", `{"queue":"rated","kind":"k"}`, 2); got != 1 {
		t.Errorf("start_rates.queues.rated 1/h: %d of 2 started", got)
	}
	for _, g := range []string{"g-rate", "crawl"} {
		if r := p.call("POST", "/v1/groups", `{"id":"`+g+`","min_interval_ms":1}`); r.status != 201 {
			t.Fatalf("group: %s", r.raw)
		}
		for range 2 {
			p.enqueue(`{"queue":"sr-` + g + `","kind":"k","group":"` + g + `"}`)
		}
	}
	started := map[string]int{}
	testutil.Eventually(t, "every group job started or its group paused", func() error {
		for _, g := range []string{"g-rate", "crawl"} {
			started[g] += len(p.lease(`"sr-`+g+`"`, 10))
		}
		paused := p.call("GET", "/v1/groups/g-rate", "").body["paused_until"] != nil
		if started["crawl"] < 2 || !paused {
			return fmt.Errorf("started %v, g-rate paused %v", started, paused)
		}
		return nil
	})
	if started["g-rate"] != 1 {
		t.Errorf("start_rates.group 1/h: %d of 2 started", started["g-rate"])
	}
}

func parityPriority(t *testing.T, p *paritySetup, base int) {
	prios := func(tenant string, n int) []int {
		var out []int
		for range n {
			out = append(out, int(p.enqueue(`{"queue":"prio","kind":"k","tenant":"` + tenant + `","priority":99}`)["priority"].(float64)))
		}
		return out
	}
	b := base
	for _, c := range []struct {
		what, tenant string
		want         []int
	}{
		{"default_tier tiny (bucket 1, modifier 2)", "t1", []int{b, b + 2, b + 4}},
		{"tenants.vip: enterprise", "vip", []int{b, b, b}},
		{"by_concurrency 100 → growth, tenant big at 200", "big", []int{b, b, b}},
	} {
		if got := prios(c.tenant, len(c.want)); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: priorities %v, want %v", c.what, got, c.want)
		}
	}
}

func parityOverload(t *testing.T, p *paritySetup) {
	p.enqueue(`{"queue":"ov","kind":"k"}`)
	p.setMemory(900)
	var r reply
	testutil.Eventually(t, "overloaded at 90% memory (threshold 85%)", func() bool {
		r = p.call("POST", "/v1/jobs", `{"queue":"ov","kind":"k"}`)
		return r.status == 503
	})
	if !strings.Contains(r.raw, "memory 90% (threshold 85%)") || r.header.Get("Retry-After") != "9" {
		t.Errorf("overload refusal: %v %s", r.header, r.raw)
	}
	if ls := p.lease(`"ov"`, 1); len(ls) != 0 {
		t.Errorf("pause_leasing: leased %d while overloaded", len(ls))
	}
	p.setMemory(840) // below 85% but not by the hysteresis (2 points)
	p.setMemory(820)
	testutil.Eventually(t, "clear below 83%", func() bool {
		return p.call("POST", "/v1/jobs", `{"queue":"ov","kind":"k"}`).status == 201
	})
	if ls := p.lease(`"ov"`, 1); len(ls) != 1 {
		t.Errorf("leased %d once the load fell", len(ls))
	}
}

// TestEveryQueueKeyIsUsed fails when a key under queues:, storage: or
// webhooks.delivery: is added to the config without being used (and so
// checked) by everyQueueKey.
func TestEveryQueueKeyIsUsed(t *testing.T) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(everyQueueKey), &doc); err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		used[path] = true
		if n.Kind == yaml.DocumentNode || n.Kind == yaml.SequenceNode {
			for _, c := range n.Content {
				walk(c, path)
			}
		}
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				walk(n.Content[i+1], path+"."+n.Content[i].Value)
			}
		}
	}
	walk(&doc, "")
	skip := map[string]bool{".queues.backends": true, ".queues.default_backend": true, ".queues.rabbitmq": true}
	var missing []string
	var want func(t reflect.Type, path string, mapKey string)
	want = func(t reflect.Type, path, mapKey string) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
			t = t.Elem()
		}
		if t.Kind() == reflect.Map {
			path += "." + mapKey
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || t == reflect.TypeFor[config.Duration]() {
			return
		}
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			p := path + "." + name
			if skip[p] {
				continue
			}
			if !used[p] && !usedUnderAnyKey(used, p) {
				missing = append(missing, p)
			}
			want(f.Type, p, "*")
		}
	}
	want(reflect.TypeFor[config.Queues](), ".queues", "")
	// The store tuning and webhook delivery keys: the Redis address
	// aside (the Redis tuning keys are checked on a Redis deployment).
	skip[".storage.redis_url"], skip[".storage.redis_mode"], skip[".storage.prefix"] = true, true, true
	skip[".storage.postgres_url"] = true // the Postgres tests open a store from it
	want(reflect.TypeFor[config.Storage](), ".storage", "")
	want(reflect.TypeFor[config.WebhookDelivery](), ".webhooks.delivery", "")
	if len(missing) > 0 {
		t.Errorf("keys not used by everyQueueKey: %v", missing)
	}
}

// usedUnderAnyKey matches a path with "*" for map keys against the used
// paths.
func usedUnderAnyKey(used map[string]bool, pattern string) bool {
	if !strings.Contains(pattern, "*") {
		return false
	}
	for u := range used {
		if ok, _ := filepath.Match(strings.ReplaceAll(pattern, ".", "/"), strings.ReplaceAll(u, ".", "/")); ok {
			return true
		}
	}
	return false
}
