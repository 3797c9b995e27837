package server

import (
	"context"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/server/config"
)

// queueNamesFor is how long the list of queues read for the per-queue
// maintenance is reused. The queues of the jobs this server leases are
// added at once (seen), so the rescue of their expired leases never waits
// for it; a queue only other processes lease from (Go workers on the same
// store, which rescue their own) is seen within it.
const queueNamesFor = 10 * time.Second

// queueNames caches the names of every queue with jobs (Backend.Stats),
// plus the queues jobs were leased from since.
type queueNames struct {
	mu    sync.Mutex
	at    time.Time
	names []string
}

// seen adds the queue of each leased job.
func (n *queueNames) seen(leases []queue.Lease) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, l := range leases {
		if !slices.Contains(n.names, l.Job.Queue) {
			n.names = append(n.names, l.Job.Queue)
		}
	}
}

func (n *queueNames) get(ctx context.Context, b backend.Backend) ([]string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.at.IsZero() && time.Since(n.at) < queueNamesFor {
		return slices.Clone(n.names), nil
	}
	stats, err := b.Stats(ctx)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(stats))
	for _, s := range stats {
		names = append(names, s.Queue)
	}
	n.names, n.at = names, time.Now()
	return slices.Clone(names), nil
}

// byKey returns, for each distinct value of key over the queues named in
// perQueue and the queues in all, the queues that have it, the queues-wide
// value's group last. When no queue named in perQueue differs from wide,
// it returns one group with no queue names: "every queue".
func byKey[K comparable](all []string, perQueue map[string]config.QueueSettings, key func(string) K, wide K) ([]K, [][]string) {
	differs := false
	for name := range perQueue {
		if key(name) != wide {
			differs = true
			break
		}
	}
	if !differs {
		return []K{wide}, [][]string{nil}
	}
	names := slices.Clone(all)
	for name := range perQueue {
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	idx := map[K]int{}
	var keys []K
	var groups [][]string
	for _, name := range names {
		k := key(name)
		i, ok := idx[k]
		if !ok {
			i = len(keys)
			idx[k] = i
			keys = append(keys, k)
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], name)
	}
	return keys, groups
}

// maintain runs the queue's maintenance until ctx ends: the rescue of
// expired leases (workers over HTTP cannot do it), the cleaner and the
// queues' aging steps, each by its queue's settings and each following
// config changes at its next round.
func (s *Server) maintain(ctx context.Context, wg *sync.WaitGroup) {
	if s.qo == nil {
		s.qo = newQueueOptions(s)
	}
	s.qo.load.start(ctx, wg)
	wg.Add(2)
	go func() {
		defer wg.Done()
		s.every(ctx, func(q *config.Queues) time.Duration { return durOr(q.RescueEvery, config.DefaultRescueEvery) }, func(ctx context.Context) {
			s.qo.aging.sync(ctx, s)
			s.rescueRound(ctx)
		})
	}()
	go func() {
		defer wg.Done()
		s.every(ctx, func(q *config.Queues) time.Duration { return durOr(q.Cleanup.Interval, config.DefaultCleanupEvery) }, s.cleanRound)
	}()
}

func durOr(d config.Duration, def time.Duration) time.Duration {
	if d > 0 {
		return d.D()
	}
	return def
}

// every runs round at once and then after each interval, read from the
// config in use before every wait, until ctx ends.
func (s *Server) every(ctx context.Context, interval func(*config.Queues) time.Duration, round func(context.Context)) {
	for {
		round(ctx)
		t := time.NewTimer(interval(&s.Config().Queues))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// rescueRound rescues expired leases, failing jobs that reached their
// queue's max_stalls.
func (s *Server) rescueRound(ctx context.Context) {
	q := &s.Config().Queues
	all, err := s.namesIfNeeded(ctx, q, func(o config.QueueSettings) bool { return o.MaxStalls != 0 })
	if err != nil {
		s.roundFault(ctx, "server: listing queues for the rescue of expired leases", err)
		return
	}
	stalls, groups := byKey(all, q.PerQueue, func(n string) int { return q.For(n).MaxStalls }, q.For("").MaxStalls)
	for i, queues := range groups {
		res, err := s.backend.RescueExpired(ctx, backend.RescueRequest{Queues: queues, MaxStalls: stalls[i]})
		switch {
		case err != nil:
			s.roundFault(ctx, "server: rescuing expired leases", err)
		case res.Total() > 0:
			s.log.Warn("server: rescued jobs with expired leases", "requeued", res.Requeued, "failed", res.Failed, "cancelled", res.Cancelled)
		}
	}
}

// cleanRound deletes finished jobs past their queue's retention.
func (s *Server) cleanRound(ctx context.Context) {
	q := &s.Config().Queues
	all, err := s.namesIfNeeded(ctx, q, func(o config.QueueSettings) bool { return o.Retention != (config.Retention{}) })
	if err != nil {
		s.roundFault(ctx, "server: listing queues for the cleaner", err)
		return
	}
	keep, groups := byKey(all, q.PerQueue, func(n string) queue.Retention { return q.For(n).Retention }, q.For("").Retention)
	for i, queues := range groups {
		cl := queue.NewCleaner(s.backend, queue.CleanerConfig{Queues: queues, Retention: keep[i], Batch: q.Cleanup.Batch, Logger: s.log})
		if _, err := cl.Clean(ctx); err != nil {
			s.roundFault(ctx, "server: deleting finished jobs", err)
		}
	}
}

// namesIfNeeded lists the queues when some queue in per_queue has a
// setting of its own (has), and nil otherwise.
func (s *Server) namesIfNeeded(ctx context.Context, q *config.Queues, has func(config.QueueSettings) bool) ([]string, error) {
	for _, o := range q.PerQueue {
		if has(o) {
			return s.qo.queues.get(ctx, s.backend)
		}
	}
	return nil, nil
}

func (s *Server) roundFault(ctx context.Context, msg string, err error) {
	if ctx.Err() == nil {
		s.log.Error(msg, "error", err)
	}
}

// agingSync writes the aging steps of queues.per_queue to the job store,
// at start and after each change, retrying each round until the store
// takes them (it may not answer at start). A queue dropped from the
// config, or whose aging is removed, goes back to 0 (strict order).
type agingSync struct {
	mu      sync.Mutex
	wanted  map[string]int
	written map[string]int
}

// want records the steps cfg asks for.
func (a *agingSync) want(q *config.Queues) {
	w := map[string]int{}
	for name, o := range q.PerQueue {
		if o.Aging != 0 {
			w[name] = o.Aging
		}
	}
	a.mu.Lock()
	a.wanted = w
	a.mu.Unlock()
}

// sync writes what differs from what was written.
func (a *agingSync) sync(ctx context.Context, s *Server) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if f := s.backend.Features(); f.Tenants == nil {
		if len(a.wanted) > 0 {
			s.log.Warn("server: queues.per_queue aging is set but the job backend has no tenant scheduling; it is ignored", "backend", f.Name)
			a.wanted = nil
		}
		return
	}
	if a.written == nil {
		a.written = map[string]int{}
	}
	steps := map[string]int{}
	for name := range a.written {
		steps[name] = 0
	}
	for name, step := range a.wanted {
		steps[name] = step
	}
	for _, name := range sortedSteps(steps) {
		step := steps[name]
		if cur, ok := a.written[name]; ok && cur == step || !ok && step == 0 {
			continue
		}
		if err := s.jobs.SetAging(ctx, name, step); err != nil {
			s.roundFault(ctx, "server: writing a queue's aging step", err)
			return
		}
		a.written[name] = step
		if step == 0 {
			delete(a.written, name)
		}
	}
}

func sortedSteps(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
