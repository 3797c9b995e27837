package redisqueue_test

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/queuetest"
	"github.com/sluicehq/sluice/queue/redisqueue"
)

// TestLeanMatchesFull checks that the lean scripts store exactly what
// the full ones store: two backends on one server and one clock, the
// second with the lean path off, make the same calls under key prefixes
// of their own, and after every step each key of the one holds what the
// same key of the other holds, the event log included. The steps cover
// what the lean path takes (jobs with payloads, priorities, timeouts,
// webhooks, delays, aging, a unique key) and what it hands to the full
// scripts (a due job, a tenant's job, a complete with the outbox on).
func TestLeanMatchesFull(t *testing.T) {
	for _, srv := range servers {
		for _, m := range []struct {
			name string
			opts redisqueue.Options
		}{
			{"plain", redisqueue.Options{}},
			{"events", redisqueue.Options{Events: true}},
			{"outbox", redisqueue.Options{Events: true, Outbox: true}},
		} {
			t.Run(srv.name+"/"+m.name, func(t *testing.T) {
				testLeanMatchesFull(t, srv.open(t), m.opts)
			})
		}
	}
}

// testLeanMatchesFull is TestLeanMatchesFull on server s, both backends
// with opts.
func testLeanMatchesFull(t *testing.T, s server, opts redisqueue.Options) {
	clk := clock.NewFake(queuetest.Epoch)
	opts.Clock = clk
	opts.Prefix = s.prefix + "lean:"
	lean := s.backend(t, opts)
	opts.Prefix = s.prefix + "full:"
	full := s.backend(t, opts)
	redisqueue.DisableLean(full)
	c := s.client(t)
	pair := leanPair{t: t, c: c, prefix: string(s.prefix), lean: lean, full: full}
	ctx := context.Background()
	for _, b := range []*redisqueue.Backend{lean, full} {
		if err := b.SetAging(ctx, "aged", 3); err != nil {
			t.Fatal(err)
		}
	}
	hook := &queue.Webhook{URL: "https://example.com/hook"}
	steps := []struct {
		name  string
		specs []queue.JobSpec
		lease int
	}{
		{"plain", []queue.JobSpec{{Kind: "k"}}, 1},
		{"fields", []queue.JobSpec{{Kind: "k", Payload: []byte(`{"a":1}`), Priority: 2, Timeout: time.Minute,
			MaxAttempts: 3, Webhook: hook, Trace: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}, 1},
		{"batch", []queue.JobSpec{{Kind: "a"}, {Kind: "b", Priority: 1}, {Kind: "c"}}, 2},
		{"delayed", []queue.JobSpec{{Kind: "later", RunAt: queuetest.Epoch.Add(time.Hour)}}, 5},
		{"unique", []queue.JobSpec{{Kind: "u", UniqueKey: "once"}, {Kind: "u2", UniqueKey: "once"}}, 5},
		{"unique again", []queue.JobSpec{{Kind: "u3", UniqueKey: "once"}}, 5},
		{"unique window", []queue.JobSpec{{Kind: "w", UniqueKey: "win", UniqueFor: time.Hour},
			{Kind: "w2", UniqueKey: "win", UniqueFor: time.Hour}}, 5},
		{"unique window again", []queue.JobSpec{{Kind: "w3", UniqueKey: "win", UniqueFor: time.Hour}}, 5},
		{"tenant", []queue.JobSpec{{Kind: "t", Tenant: "acme"}}, 5},
		{"aged", []queue.JobSpec{{Queue: "aged", Kind: "x", Priority: 2}, {Queue: "aged", Kind: "y"}}, 0},
	}
	for _, st := range steps {
		clk.Advance(time.Millisecond)
		pair.enqueue(st.name, st.specs)
		pair.same(st.name + ": after Enqueue")
		if st.lease > 0 {
			pair.leaseAndComplete(st.name, st.lease, "main")
		}
	}
	clk.Advance(2 * time.Hour) // the delayed job is due: the lean lease hands over
	pair.leaseAndComplete("due", 10, "main")
	pair.leaseAndComplete("aged", 10, "aged")
	// A lease of two queues merges them by priority band, then order; the
	// clock moves past the lean path's pause after the due job's hand-over.
	clk.Advance(2 * time.Second)
	pair.enqueue("two queues", []queue.JobSpec{{Queue: "main", Kind: "m1", Priority: 1}, {Queue: "other", Kind: "o1"},
		{Queue: "main", Kind: "m2"}, {Queue: "other", Kind: "o2", Priority: 1}, {Queue: "other", Kind: "o3"}})
	pair.leaseAndComplete("two queues", 3, "main", "other")
	pair.leaseAndComplete("two queues, the rest", 10, "other", "main")
}

// leanPair drives a lean backend and a full one through the same calls.
type leanPair struct {
	t          *testing.T
	c          *redis.Client
	prefix     string
	lean, full *redisqueue.Backend
}

// enqueue enqueues specs (queue "main" unless named) on both backends and
// checks they answered the same: ids, states, duplicates.
func (p leanPair) enqueue(step string, specs []queue.JobSpec) {
	var got [2]string
	for i, b := range []*redisqueue.Backend{p.lean, p.full} {
		own := slices.Clone(specs)
		for i := range own {
			if own[i].Queue == "" {
				own[i].Queue = "main"
			}
		}
		res, err := queue.NewClient(b).EnqueueBatch(context.Background(), own)
		if err != nil {
			p.t.Fatalf("%s: Enqueue: %v", step, err)
		}
		for _, r := range res {
			got[i] += fmt.Sprintf("%s %s %t %s; ", r.Job.ID, r.Job.State, r.Duplicate, r.Job.Kind)
		}
	}
	if got[0] != got[1] {
		p.t.Errorf("%s: Enqueue: lean %s, full %s", step, got[0], got[1])
	}
}

// leaseAndComplete leases up to max jobs of queues on both backends,
// checks they got the same jobs, and completes them.
func (p leanPair) leaseAndComplete(step string, max int, queues ...string) {
	ctx := context.Background()
	var got [2][]queue.Lease
	for i, b := range []*redisqueue.Backend{p.lean, p.full} {
		ls, err := b.Lease(ctx, backend.LeaseRequest{Queues: queues, WorkerID: "w", Max: max, LeaseFor: time.Minute})
		if err != nil {
			p.t.Fatalf("%s: Lease: %v", step, err)
		}
		got[i] = ls
	}
	if len(got[0]) != len(got[1]) {
		p.t.Fatalf("%s: lean leased %d jobs, full %d", step, len(got[0]), len(got[1]))
	}
	for i := range got[0] {
		a, b := got[0][i].Job, got[1][i].Job
		if a.Kind != b.Kind || a.Attempt != b.Attempt || !a.StartedAt.Equal(b.StartedAt) || !a.LeaseUntil.Equal(b.LeaseUntil) {
			p.t.Errorf("%s: lease %d: lean %+v, full %+v", step, i, a, b)
		}
	}
	p.same(step + ": after Lease")
	for i, b := range []*redisqueue.Backend{p.lean, p.full} {
		for _, l := range got[i] {
			if err := b.Complete(ctx, l.Job.ID, l.Token, []byte("done")); err != nil {
				p.t.Fatalf("%s: Complete: %v", step, err)
			}
		}
	}
	p.same(step + ": after Complete")
}

// same compares every key of the lean backend with the full one's: type
// and content, lease tokens and stream entry ids aside.
func (p leanPair) same(when string) {
	p.t.Helper()
	lean, full := p.dump("lean:"), p.dump("full:")
	for _, k := range slices.Sorted(maps.Keys(lean)) {
		if f, ok := full[k]; !ok {
			p.t.Errorf("%s: only lean has %s = %s", when, k, lean[k])
		} else if f != lean[k] {
			p.t.Errorf("%s: %s: lean %s, full %s", when, k, lean[k], f)
		}
	}
	for k, v := range full {
		if _, ok := lean[k]; !ok {
			p.t.Errorf("%s: only full has %s = %s", when, k, v)
		}
	}
}

// dump reads every key of one backend (its prefix ends in side), keyed
// by the name without the prefix, values as text without it and without
// the nonces of outbox event ids.
func (p leanPair) dump(side string) map[string]string {
	ctx := context.Background()
	pre := p.prefix + side
	out := map[string]string{}
	keys, err := p.c.Keys(ctx, pre+"*").Result()
	if err != nil {
		p.t.Fatal(err)
	}
	for _, k := range keys {
		var v string
		switch typ := p.c.Type(ctx, k).Val(); typ {
		case "hash":
			h := p.c.HGetAll(ctx, k).Val()
			delete(h, "tk")
			v = strings.Join(sortedPairs(h), " ")
		case "zset":
			for _, z := range p.c.ZRangeWithScores(ctx, k, 0, -1).Val() {
				v += z.Member.(string) + "=" + strconv.FormatFloat(z.Score, 'f', -1, 64) + " "
			}
		case "set":
			v = strings.Join(slices.Sorted(slices.Values(p.c.SMembers(ctx, k).Val())), " ")
		case "stream":
			for _, e := range p.c.XRange(ctx, k, "-", "+").Val() {
				v += strings.Join(sortedPairs(streamValues(e.Values)), " ") + "; "
			}
		case "string":
			v = p.c.Get(ctx, k).Val()
		default:
			v = typ
		}
		// Event ids end in a random nonce per call.
		name := eventNonce.ReplaceAllString(strings.TrimPrefix(k, pre), "$1")
		out[name] = eventNonce.ReplaceAllString(strings.ReplaceAll(v, pre, ""), "$1")
	}
	return out
}

var eventNonce = regexp.MustCompile(`(evt_[0-9]{16})[0-9a-f]{16}`)

func streamValues(m map[string]any) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v.(string)
	}
	return out
}

func sortedPairs(h map[string]string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(h)) {
		out = append(out, k+"="+h[k])
	}
	return out
}
