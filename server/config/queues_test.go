package config

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/sluicehq/sluice/queue"
)

// TestQueueSettingsValidation breaks one rule of the queue settings per
// case: the problem names the line, the field and the rule.
func TestQueueSettingsValidation(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, doc string
		line      int
		path, msg string
	}{
		{"attempts", "queues:\n  max_attempts: 1001\n", 2, "queues.max_attempts", "must be from 0 (default 25) to 1000, got 1001"},
		{"stalls", "queues:\n  max_stalls: -1\n", 2, "queues.max_stalls", "must not be negative, got -1"},
		{"backoff order", "queues:\n  backoff: {base: 1m, max: 1s}\n", 2, "queues.backoff.max", "must be at least base (1m0s), got 1s"},
		{"backoff negative", "queues:\n  backoff:\n    base: -1s\n", 3, "queues.backoff.base", "must not be negative, got -1s"},
		{"rescue", "queues:\n  rescue_every: -1s\n", 2, "queues.rescue_every", "must not be negative, got -1s"},
		{"cleanup batch", "queues:\n  cleanup:\n    batch: -5\n", 3, "queues.cleanup.batch", "must not be negative, got -5"},
		{"admission", "queues:\n  admission:\n    retry_after: -1s\n", 3, "queues.admission.retry_after", "must not be negative, got -1s"},
		{"per queue attempts", "queues:\n  per_queue:\n    scrape:\n      max_attempts: -1\n", 4, "queues.per_queue.scrape.max_attempts", "must be from 0 (default 25) to 1000, got -1"},
		{"per queue depth", "queues:\n  per_queue:\n    scrape: {max_depth: -2}\n", 3, "queues.per_queue.scrape.max_depth", "must be -1 (unlimited), 0 (default) or positive, got -2"},
		{"per queue aging", "queues:\n  per_queue:\n    scrape:\n      aging: -3\n", 4, "queues.per_queue.scrape.aging", "must be from 0 (off) to 1000000, got -3"},
		{"per queue lease", "queues:\n  per_queue:\n    scrape:\n      lease: -1m\n", 4, "queues.per_queue.scrape.lease", "must not be negative, got -1m0s"},
		{"per queue name", "queues:\n  per_queue:\n    \"  \": {lease: 1m}\n", 3, "queues.per_queue.  ", `queue name must not be blank (only spaces), got "  "`},
		{"per queue unknown", "queues:\n  per_queue:\n    scrape: {leese: 1m}\n", 3, "queues.per_queue.scrape.leese", `unknown field "leese" (known: aging, backoff, lease, max_attempts, max_depth, max_stalls, retention)`},
		{"start rate quota", "queues:\n  start_rates:\n    tenant: {quota: 0, window: 1s}\n", 3, "queues.start_rates.tenant.quota", "must be a positive integer, got 0"},
		{"start rate window", "queues:\n  start_rates:\n    groups:\n      crawl: {quota: 5}\n", 4, "queues.start_rates.groups.crawl.window", "is required: a duration such as 1s, 60s or 1h"},
		{"start rate algorithm", "queues:\n  start_rates:\n    queues:\n      scrape: {quota: 5, window: 1s, algorithm: leaky}\n", 4, "queues.start_rates.queues.scrape.algorithm", `must be "fixed-window", "sliding-window" or "token-bucket", got "leaky"`},
		{"start rate burst", "queues:\n  start_rates:\n    queue: {quota: 5, window: 1s, burst: 9}\n", 3, "queues.start_rates.queue.burst", "only applies to algorithm token-bucket"},
		{"priority base", "queues:\n  priority:\n    base: -1\n", 3, "queues.priority.base", "must be from 0 to 1048575 (absent: 10), got -1"},
		{"priority window", "queues:\n  priority:\n    window: 1500us\n", 3, "queues.priority.window", "must be a whole number of milliseconds, got 1.5ms"},
		{"priority tier", "queues:\n  priority:\n    default_tier: platinum\n", 3, "queues.priority.default_tier", `unknown tier "platinum" (known: enterprise, free, growth, hobby, standard)`},
		{"priority custom tier", "queues:\n  priority:\n    tiers:\n      gold: {bucket: 0, modifier: 0.1}\n", 4, "queues.priority.tiers.gold.bucket", "must be a positive integer, got 0"},
		{"priority modifier", "queues:\n  priority:\n    tiers:\n      gold:\n        bucket: 5\n        modifier: -1\n", 6, "queues.priority.tiers.gold.modifier", "must be positive, got -1"},
		{"priority tenant tier", "queues:\n  priority:\n    tiers: {gold: {bucket: 5, modifier: 1}}\n    tenants:\n      acme: silver\n", 5, "queues.priority.tenants.acme", `unknown tier "silver" (known: enterprise, free, gold, growth, hobby, standard)`},
		{"priority by concurrency", "queues:\n  priority:\n    by_concurrency:\n      - {min: 0, tier: growth}\n", 4, "queues.priority.by_concurrency[0].min", "must be a positive integer, got 0"},
		{"priority by concurrency tier", "queues:\n  priority:\n    by_concurrency:\n      - {min: 5}\n", 4, "queues.priority.by_concurrency[0].tier", "is required: a tier name such as growth"},
		{"overload cpu", "queues:\n  overload:\n    cpu: 80\n", 3, "queues.overload.cpu", "must be a share from 0 (default) to 1, or -1 (off), got 80"},
		{"overload memory", "queues:\n  overload:\n    memory: -0.5\n", 3, "queues.overload.memory", "must be a share from 0 (default) to 1, or -1 (off), got -0.5"},
		{"overload both off", "queues:\n  overload:\n    enabled: true\n    cpu: -1\n    memory: -1\n", 4, "queues.overload.cpu", "cpu and memory are both off: the monitor would never report overload"},
		{"overload source", "queues:\n  overload:\n    source: proc\n", 3, "queues.overload.source", `must be "auto", "cgroup" or "host", got "proc"`},
		{"overload cgroup dir", "queues:\n  overload:\n    source: host\n    cgroup_dir: /sys/fs/cgroup\n", 4, "queues.overload.cgroup_dir", `only applies to source "cgroup"`},
		{"overload interval", "queues:\n  overload:\n    interval: -1s\n", 3, "queues.overload.interval", "must not be negative, got -1s"},
		{"overload pause", "queues:\n  overload:\n    pause_leasing: sometimes\n", 3, "queues.overload.pause_leasing", `must be true or false, got "sometimes"`},
		{"group concurrency", "queues:\n  groups:\n    max_concurrency: -1\n", 3, "queues.groups.max_concurrency", "must not be negative, got -1"},
		{"group ttl", "queues:\n  groups:\n    ttl: nope\n", 3, "queues.groups.ttl", `must be a duration such as 60s, 1m or 7d, got "nope"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseEnv([]byte(tc.doc), "t.yaml", env(nil))
			var cerr *Error
			if !errors.As(err, &cerr) {
				t.Fatalf("err = %v, want *Error", err)
			}
			if len(cerr.Problems) != 1 {
				t.Fatalf("got %d problems, want 1:\n%v", len(cerr.Problems), err)
			}
			got := cerr.Problems[0]
			if got.Line != tc.line || got.Path != tc.path || got.Message != tc.msg {
				t.Errorf("got  line %d path %q msg %q\nwant line %d path %q msg %q", got.Line, got.Path, got.Message, tc.line, tc.path, tc.msg)
			}
		})
	}
}

// TestQueueFor checks the order per queue, queues-wide, built-in.
func TestQueueFor(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte(`
queues:
  lease: 45s
  max_attempts: 7
  backoff: {base: 2s}
  retention: {completed: 1h}
  per_queue:
    scrape: {lease: 2m, max_stalls: 3, backoff: {max: 10s}, retention: {failed: 6h}, max_depth: -1}
    mail: {max_depth: 50}
`), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	q := &cfg.Queues
	for _, c := range []struct {
		queue string
		want  Effective
	}{
		{"scrape", Effective{Lease: 2 * time.Minute, MaxAttempts: 7, MaxStalls: 3, BackoffBase: 2 * time.Second, BackoffMax: 10 * time.Second,
			Retention: queue.Retention{Completed: time.Hour, Failed: 6 * time.Hour, Cancelled: 24 * time.Hour}}},
		{"other", Effective{Lease: 45 * time.Second, MaxAttempts: 7, MaxStalls: queue.DefaultMaxStalls, BackoffBase: 2 * time.Second, BackoffMax: time.Hour,
			Retention: queue.Retention{Completed: time.Hour, Failed: 7 * 24 * time.Hour, Cancelled: 24 * time.Hour}}},
	} {
		got := q.For(c.queue)
		got.Backoff = nil
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("For(%q):\ngot  %+v\nwant %+v", c.queue, got, c.want)
		}
	}
	if got := q.QueueMaxDepth(); len(got) != 2 || got["scrape"] != -1 || got["mail"] != 50 {
		t.Errorf("QueueMaxDepth = %v", got)
	}
}

// TestPriorityBaseZero tells an explicit "base: 0" from an absent key.
func TestPriorityBaseZero(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		doc  string
		want int
	}{
		{"queues:\n  priority: {enabled: true}\n", queue.DefaultBasePriority},
		{"queues:\n  priority: {enabled: true, base: 0}\n", 0},
		{"queues:\n  priority: {enabled: true, base: 4}\n", 4},
	} {
		cfg, err := Parse([]byte(c.doc), "t.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.Queues.Priority.BaseOrDefault(); got != c.want {
			t.Errorf("%q: base %d, want %d", c.doc, got, c.want)
		}
	}
}
