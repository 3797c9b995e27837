package redisqueue_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/keyspace"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/redisqueue"
)

// fairCase is one job made ready in a queue whose fair-order state the
// case writes first: its virtual time, its aging step and the job's
// tenant's finish tag, the tenant's weight as stored in its settings
// (0: none stored) and the job's priority.
type fairCase struct {
	name     string
	tenant   string
	weight   int
	vtime    int64
	finish   int64
	aging    int
	priority int
}

// fairCases spans the rule's branches: finish tag behind and ahead of the
// virtual time, weights that divide the unit and that do not, weights
// outside 1..MaxWeight as a store could hold them, priorities with and
// without aging up to their bounds, values near the largest exact float,
// and tenant names that need escaping into their settings key.
var fairCases = []fairCase{
	{name: "plain, all zero"},
	{name: "plain, virtual time ahead", vtime: 5_000, finish: 2_000},
	{name: "plain, finish tag ahead", vtime: 1_000, finish: 7_000},
	{name: "plain, priority without aging", vtime: 3_000, priority: 7},
	{name: "plain, priority with aging", vtime: 3_000, finish: 4_000, aging: 20, priority: 3},
	{name: "plain, largest priority and aging", vtime: 12_345, aging: queue.MaxAgingStep, priority: queue.MaxPriority},
	{name: "plain, aging beyond its bound", vtime: 10, aging: 5 * queue.MaxAgingStep, priority: 2},
	{name: "plain, near 2^53", vtime: 1<<53 - 2*backend.FairUnit, finish: 17},
	{name: "plain, near 2^53 with aging", vtime: 1<<53 - queue.MaxPriority*queue.MaxAgingStep*backend.FairUnit - 4*backend.FairUnit,
		aging: queue.MaxAgingStep, priority: queue.MaxPriority},
	{name: "tenant, no weight stored", tenant: "acme", vtime: 2_000, finish: 1_000},
	{name: "tenant, weight 1", tenant: "w1", weight: 1, vtime: 2_000, finish: 9_000},
	{name: "tenant, weight 3", tenant: "w3", weight: 3, vtime: 1_000, finish: 1_333},
	{name: "tenant, weight 7 with aging", tenant: "w7", weight: 7, vtime: 70_000, finish: 1, aging: 50, priority: 9},
	{name: "tenant, weight 999", tenant: "w999", weight: 999, vtime: 1, finish: 999_999},
	{name: "tenant, largest weight", tenant: "wmax", weight: queue.MaxWeight, vtime: 4_000, finish: 4_001},
	{name: "tenant, weight above its bound", tenant: "wbig", weight: 5 * queue.MaxWeight, vtime: 100, priority: 4},
	{name: "tenant, negative weight", tenant: "wneg", weight: -4, vtime: 100, finish: 50},
	{name: "tenant, near 2^53", tenant: "big", weight: 3, vtime: 1<<53 - 3*backend.FairUnit, finish: 1<<53 - 2*backend.FairUnit},
	{name: "tenant name with spaces and separators", tenant: "a b:c/{x}", weight: 3, vtime: 10},
	{name: "tenant name with percent and tilde", tenant: "50%~7E", weight: 7, finish: 10},
	{name: "tenant name outside ASCII", tenant: "é-队列", weight: 9, vtime: 5, finish: 6},
}

// TestFairTagsMatchGo checks that the scripts give a job the start tag,
// order and tenant finish tag that backend.FairTag and backend.FairOrder
// compute, through the path the store uses: each case writes a fresh
// queue's fair-order state and the tenant's weight, enqueues one job and
// reads back what the script stored. Jobs without a tenant run through
// the lean enqueue and, with the lean path off, through the full one;
// a tenant's weight is found only when the scripts name its settings key
// as the Go side does.
func TestFairTagsMatchGo(t *testing.T) {
	forEachServer(t, func(t *testing.T, s server) {
		c := s.client(t)
		paths := map[string]*redisqueue.Backend{"lean": s.backendOn(t, c, redisqueue.Options{})}
		full := s.backendOn(t, c, redisqueue.Options{})
		redisqueue.DisableLean(full)
		paths["full"] = full
		for path, b := range paths {
			for i, fc := range fairCases {
				if fc.tenant != "" && path == "lean" {
					continue // a tenant's job always takes the full path
				}
				t.Run(path+"/"+fc.name, func(t *testing.T) {
					checkFairCase(t, s, c, b, fmt.Sprintf("fair-%s-%d", path, i), fc)
				})
			}
		}
	})
}

// checkFairCase sets up case fc in the fresh queue q, enqueues its job
// through b and compares what the script stored with the Go rule.
func checkFairCase(t *testing.T, s server, c *redis.Client, b *redisqueue.Backend, q string, fc fairCase) {
	ctx := context.Background()
	sched := redisqueue.SchedKey(b, q)
	tenant := fc.tenant
	if tenant != "" {
		tenant = q + "/" + tenant // a tenant of its own: its finish tag and weight are the case's
	}
	if err := c.HSet(ctx, sched, "v", fc.vtime, "ag", fc.aging, "f:"+tenant, fc.finish).Err(); err != nil {
		t.Fatal(err)
	}
	weight := 1 // queue.TenantConfig.Effective: no weight stored is weight 1
	if fc.weight != 0 {
		weight = fc.weight
		tkey := string(s.prefix) + "sched:t:" + keyspace.Escape(tenant)
		if err := c.HSet(ctx, tkey, "w", fc.weight).Err(); err != nil {
			t.Fatal(err)
		}
	}
	job := mustEnqueue(t, queue.NewClient(b), queue.JobSpec{Queue: q, Kind: "k", Tenant: tenant, Priority: fc.priority})
	jk, err := redisqueue.JobKey(b, job.ID)
	if err != nil {
		t.Fatal(err)
	}
	f, err := c.HMGet(ctx, jk, "vo", "vb", "vs", "pr").Result()
	if err != nil {
		t.Fatal(err)
	}
	next, err := c.HGet(ctx, sched, "f:"+tenant).Result()
	if err != nil {
		t.Fatal(err)
	}
	start, wantNext := backend.FairTag(fc.vtime, fc.finish, weight)
	band, rank := backend.FairOrder(start, fc.priority, fc.aging)
	got := storedTag{vo: str(f[0]), band: fieldOr(f[1], f[3]), start: fieldOr(f[2], strconv.FormatInt(rankOf(f[0]), 10)), next: next}
	want := storedTag{vo: fmt.Sprintf("%016d", rank), band: strconv.FormatInt(band, 10),
		start: strconv.FormatInt(start, 10), next: strconv.FormatInt(wantNext, 10)}
	if got != want {
		t.Errorf("stored %+v; Go's rule gives %+v", got, want)
	}
}

// storedTag is what a ready job's fair tag leaves in Redis: its rank (vo,
// 16 digits), band and start tag, and its tenant's new finish tag.
type storedTag struct{ vo, band, start, next string }

func str(v any) string {
	s, _ := v.(string)
	return s
}

// fieldOr is the stored field v, or fallback when the script left it out
// because it equals the field it falls back to.
func fieldOr(v, fallback any) string {
	if s := str(v); s != "" {
		return s
	}
	return str(fallback)
}

func rankOf(vo any) int64 {
	n, _ := strconv.ParseInt(str(vo), 10, 64)
	return n
}

// TestFairTagsOfABatchMatchGo checks the tags of one enqueue script that
// makes several tenants' jobs ready in turn, each finish tag carried from
// job to job within the script, against the Go rule applied in the same
// order.
func TestFairTagsOfABatchMatchGo(t *testing.T) {
	forEachServer(t, func(t *testing.T, s server) {
		ctx := context.Background()
		c := s.client(t)
		b := s.backendOn(t, c, redisqueue.Options{})
		const q = "fair-batch"
		weights := map[string]int{"": 1, "a": 1, "b": 3, "c": 7, "d": queue.MaxWeight}
		for tn, w := range weights {
			if tn != "" {
				if err := queue.NewClient(b).SetTenant(ctx, tn, queue.TenantConfig{Weight: w}); err != nil {
					t.Fatal(err)
				}
			}
		}
		vtime, aging := int64(4_000), 10
		if err := c.HSet(ctx, redisqueue.SchedKey(b, q), "v", vtime, "ag", aging, "f:b", 9_000).Err(); err != nil {
			t.Fatal(err)
		}
		finish := map[string]int64{"b": 9_000}
		order := []string{"a", "b", "", "c", "a", "d", "b", "", "c", "a", "d", "d"}
		specs := make([]queue.JobSpec, len(order))
		for i, tn := range order {
			specs[i] = queue.JobSpec{Queue: q, Kind: "k", Tenant: tn, Priority: i % 4}
		}
		res, err := queue.NewClient(b).EnqueueBatch(ctx, specs)
		if err != nil {
			t.Fatal(err)
		}
		for i, tn := range order {
			start, next := backend.FairTag(vtime, finish[tn], weights[tn])
			finish[tn] = next
			_, rank := backend.FairOrder(start, specs[i].Priority, aging)
			jk, err := redisqueue.JobKey(b, res[i].Job.ID)
			if err != nil {
				t.Fatal(err)
			}
			if vo, _ := c.HGet(ctx, jk, "vo").Result(); vo != fmt.Sprintf("%016d", rank) {
				t.Errorf("job %d (tenant %q): rank %s; Go's rule gives %016d", i, tn, vo, rank)
			}
		}
		for tn, want := range finish {
			if got, _ := c.HGet(ctx, redisqueue.SchedKey(b, q), "f:"+tn).Int64(); got != want {
				t.Errorf("tenant %q: finish tag %d; Go's rule gives %d", tn, got, want)
			}
		}
	})
}

// escapeCases are names as callers may give them: unreserved bytes alone,
// each reserved ASCII class, the key syntax's own bytes ('{', '}', ':'),
// escapes that look escaped already, control bytes, UTF-8 and bytes that
// are not UTF-8, every byte value once, and long names.
var escapeCases = func() []string {
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	return []string{
		"", "tenant", "AZaz09-_.~", "a b", "a:b", "{x}", "{", "}", ":", "}{", "::", "%", "~", "%%",
		"a/b?c=d&e#f", "50%", "%41", "%7B", "~7E", "~~",
		"!*'()", "+,;=@$", "\"\\`^|<>[]", "é", "队列", "🙂", "é-队列:{🙂}",
		"\x00", "\x01\x02\x1f", "\x7f", "\x80", "\xff", "\t\n\r", "\xc3", "\xe9\x98",
		string(all),
		strings.Repeat("tenant-", 300),
		strings.Repeat("a{b}:c%~é", 100),
		strings.Repeat("队", 500),
	}
}()

// TestLuaEscapeMatchesGo checks the scripts' one escape of a name into a
// key (lib.lua's esc, which every script but the lean and schedule ones
// carries) against keyspace.Escape.
func TestLuaEscapeMatchesGo(t *testing.T) {
	script := redis.NewScript(redisqueue.SharedSource() + `
local out = {}
for i = 3, #ARGV do
  out[#out + 1] = esc(ARGV[i])
end
return out
`)
	forEachServer(t, func(t *testing.T, s server) {
		args := append([]any{"", string(s.prefix)}, anySlice(escapeCases)...)
		res, err := script.Run(context.Background(), s.client(t), nil, args...).StringSlice()
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != len(escapeCases) {
			t.Fatalf("%d results for %d names", len(res), len(escapeCases))
		}
		for i, name := range escapeCases {
			if want := keyspace.Escape(name); res[i] != want {
				t.Errorf("esc(%.40q) = %.40q; keyspace.Escape gives %.40q", name, res[i], want)
			}
		}
	})
}

func anySlice(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// TestLuaFairMatchesGo runs fair.lua's fair, the scripts' one definition
// of the fair order, directly on the cases' values against backend.FairTag
// and backend.FairOrder, with the constants the scripts are built with.
func TestLuaFairMatchesGo(t *testing.T) {
	script := redis.NewScript(redisqueue.SharedSource() + `
local out = {}
for i = 3, #ARGV, 5 do
  local start, fin, band, rank = fair(tonumber(ARGV[i]), tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2]),
    tonumber(ARGV[i + 3]), tonumber(ARGV[i + 4]))
  out[#out + 1] = n2s(start) .. ' ' .. n2s(fin) .. ' ' .. n2s(band) .. ' ' .. n2s(rank)
end
return out
`)
	args := []any{"", ""}
	for _, fc := range fairCases {
		w := fc.weight
		if w == 0 {
			w = 1
		}
		args = append(args, fc.vtime, fc.finish, w, fc.priority, fc.aging)
	}
	forEachServer(t, func(t *testing.T, s server) {
		res, err := script.Run(context.Background(), s.client(t), nil, args...).StringSlice()
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != len(fairCases) {
			t.Fatalf("%d results for %d cases", len(res), len(fairCases))
		}
		for i, fc := range fairCases {
			w := fc.weight
			if w == 0 {
				w = 1
			}
			start, next := backend.FairTag(fc.vtime, fc.finish, w)
			band, rank := backend.FairOrder(start, fc.priority, fc.aging)
			if want := fmt.Sprintf("%d %d %d %d", start, next, band, rank); res[i] != want {
				t.Errorf("%s: fair gives %s (start, next, band, rank); Go's rule gives %s", fc.name, res[i], want)
			}
		}
	})
}
