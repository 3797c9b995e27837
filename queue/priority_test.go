package queue_test

import (
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// TestTierPriority checks the load formula against the reference numbers.
func TestTierPriority(t *testing.T) {
	t.Parallel()
	cases := []struct {
		tier queue.Tier
		n    int64
		want int
	}{
		{queue.Tier{Bucket: 200, Modifier: 0.2}, 150, 10},
		{queue.Tier{Bucket: 200, Modifier: 0.2}, 250, 20},
		{queue.Tier{Bucket: 100, Modifier: 0.3}, 150, 25},
		{queue.Tier{Bucket: 25, Modifier: 0.5}, 60, 28},
		{queue.TierFree, 25, 10},         // at the bucket: base
		{queue.TierFree, 26, 11},         // ceil(10.5)
		{queue.TierEnterprise, 1001, 11}, // ceil(10.05)
		{queue.TierGrowth, 0, 10},
		{queue.TierGrowth, 430, 13},                  // 30 × 0.1 is 3.0000000000000004 in binary
		{queue.TierHobby, 110, 13},                   // no load
		{queue.TierFree, 1 << 40, queue.MaxPriority}, // clamped
	}
	for _, c := range cases {
		if got := c.tier.Priority(queue.DefaultBasePriority, c.n); got != c.want {
			t.Errorf("Tier%+v.Priority(10, %d) = %d, want %d", c.tier, c.n, got, c.want)
		}
	}
}

func TestLoadPriorityTiers(t *testing.T) {
	t.Parallel()
	fn := queue.LoadPriority(10, func(tenant string) queue.Tier {
		if tenant == "big" {
			return queue.TierEnterprise
		}
		return queue.TierFree
	})
	cases := []struct {
		tenant string
		n      int64
		want   int
	}{
		{"small", 60, 28},
		{"big", 60, 10},
		{"big", 1100, 15},
	}
	for _, c := range cases {
		if got := fn(queue.JobSpec{Tenant: c.tenant, Priority: 3}, c.n); got != c.want {
			t.Errorf("LoadPriority(%s, %d) = %d, want %d", c.tenant, c.n, got, c.want)
		}
	}
	if got := queue.LoadPriority(10, nil)(queue.JobSpec{}, 250); got != 20 {
		t.Errorf("LoadPriority with nil tiers at 250 = %d, want 20 (TierStandard)", got)
	}
}

func TestDefaultBacklog(t *testing.T) {
	t.Parallel()
	cases := []struct{ limit, want int }{
		{0, queue.MaxBacklog}, {-1, queue.MaxBacklog}, {1, 50_000}, {25, 50_000},
		{26, 52_000}, {500, 1_000_000}, {1000, 2_000_000}, {5000, 2_000_000},
	}
	for _, c := range cases {
		if got := queue.DefaultBacklog(c.limit); got != c.want {
			t.Errorf("DefaultBacklog(%d) = %d, want %d", c.limit, got, c.want)
		}
	}
}

func TestTenantConfigEffective(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name          string
		own, defaults queue.TenantConfig
		want          queue.TenantConfig
	}{
		{"built-in", queue.TenantConfig{}, queue.TenantConfig{},
			queue.TenantConfig{Limit: queue.Unlimited, Weight: 1, Backlog: queue.MaxBacklog}},
		{"defaults", queue.TenantConfig{}, queue.TenantConfig{Limit: 5, Weight: 2, MaxWait: time.Hour},
			queue.TenantConfig{Limit: 5, Weight: 2, Backlog: 50_000, MaxWait: time.Hour}},
		{"own over defaults", queue.TenantConfig{Limit: 100, Backlog: queue.Unlimited}, queue.TenantConfig{Limit: 5, Weight: 2},
			queue.TenantConfig{Limit: 100, Weight: 2, Backlog: queue.Unlimited}},
		{"own unlimited", queue.TenantConfig{Limit: queue.Unlimited}, queue.TenantConfig{Limit: 5},
			queue.TenantConfig{Limit: queue.Unlimited, Weight: 1, Backlog: queue.MaxBacklog}},
	}
	for _, c := range cases {
		if got := c.own.Effective(c.defaults); got != c.want {
			t.Errorf("%s: Effective = %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestTenantAndGroupValidation(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		err   error
		field string
	}{
		{"limit -2", queue.TenantConfig{Limit: -2}.Validate(), "TenantConfig.Limit"},
		{"weight", queue.TenantConfig{Weight: queue.MaxWeight + 1}.Validate(), "TenantConfig.Weight"},
		{"backlog", queue.TenantConfig{Backlog: -3}.Validate(), "TenantConfig.Backlog"},
		{"max wait", queue.TenantConfig{MaxWait: -1}.Validate(), "TenantConfig.MaxWait"},
		{"ok tenant", queue.TenantConfig{Limit: queue.Unlimited, Weight: 3}.Validate(), ""},
		{"group id", queue.GroupSpec{}.Validate(0), "GroupSpec.ID"},
		{"group concurrency", queue.GroupSpec{ID: "g", MaxConcurrency: -1}.Validate(0), "GroupSpec.MaxConcurrency"},
		{"group interval", queue.GroupSpec{ID: "g", MinInterval: -1}.Validate(0), "GroupSpec.MinInterval"},
		{"group ttl", queue.GroupSpec{ID: "g", TTL: -1}.Validate(0), "GroupSpec.TTL"},
		{"completion queue alone", queue.GroupSpec{ID: "g", CompletionQueue: "q"}.Validate(0), "GroupSpec.CompletionKind"},
		{"completion payload size", queue.GroupSpec{ID: "g", CompletionKind: "k", CompletionPayload: make([]byte, 9)}.Validate(8), "GroupSpec.CompletionPayload"},
		{"ok group", queue.GroupSpec{ID: "g", MaxConcurrency: 2, CompletionKind: "report"}.Validate(0), ""},
		{"scope kind", queue.Scope{Kind: "team", Name: "a"}.Validate(), "Scope.Kind"},
		{"scope name", queue.TenantScope("").Validate(), "Scope.Name"},
	}
	for _, c := range cases {
		var ia *queue.InvalidArgumentError
		switch {
		case c.field == "" && c.err != nil:
			t.Errorf("%s: error %v, want none", c.name, c.err)
		case c.field != "" && !errors.As(c.err, &ia):
			t.Errorf("%s: error %v, want an *InvalidArgumentError", c.name, c.err)
		case c.field != "" && ia.Field != c.field:
			t.Errorf("%s: field %q, want %q", c.name, ia.Field, c.field)
		}
	}
}

func TestCompletionJob(t *testing.T) {
	t.Parallel()
	p := queue.GroupProgress{GroupSpec: queue.GroupSpec{ID: "crawl-1", Tenant: "acme", CompletionKind: "report"},
		Completed: 3, Failed: 1, Cancelled: 2}
	s, ok := backend.CompletionJob(p)
	if !ok {
		t.Fatal("CompletionJob: no job for a group with a completion kind")
	}
	want := `{"group":"crawl-1","total":6,"completed":3,"failed":1,"cancelled":2}`
	if s.Queue != queue.DefaultCompletionQueue || s.Kind != "report" || s.Tenant != "acme" || string(s.Payload) != want || s.UniqueKey != "group:crawl-1" {
		t.Errorf("CompletionJob = %+v (payload %s), want queue default, kind report, tenant acme, payload %s", s, s.Payload, want)
	}
	p.CompletionPayload = []byte("x")
	if s, _ := backend.CompletionJob(p); string(s.Payload) != "x" {
		t.Errorf("payload = %q, want the spec's", s.Payload)
	}
	if _, ok := backend.CompletionJob(queue.GroupProgress{GroupSpec: queue.GroupSpec{ID: "g"}}); ok {
		t.Error("CompletionJob without a kind made a job")
	}
}
