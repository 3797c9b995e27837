package dashboard

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/sluicehq/sluice/queue"
)

// Lister pages through jobs; queue.Client and every backend.Backend have it.
type Lister interface {
	List(ctx context.Context, f queue.ListFilter) (*queue.Page, error)
}

// The fields a breakdown can group jobs by.
const (
	ByTenant = "tenant"
	ByGroup  = "group"
	ByKind   = "kind"
	ByQueue  = "queue"
)

// DefaultMaxScan is how many jobs a breakdown reads at most by default.
const DefaultMaxScan = 20000

// DefaultMaxCalls is how many List calls a breakdown makes at most by
// default. A store may answer a filtered call with a short page, even an
// empty one, with a cursor to go on from (Redis looks at a bounded number
// of jobs per call): without this bound a rare state in a huge queue could
// make one count walk it all. At full pages DefaultMaxScan takes 20 calls.
const DefaultMaxCalls = 100

// LiveStates are the states of jobs that have not finished.
var LiveStates = []queue.State{queue.StateScheduled, queue.StatePending, queue.StateWaiting, queue.StateActive, queue.StateRetrying}

// BreakdownRequest selects the jobs to count and how to group them.
type BreakdownRequest struct {
	// By is the field to group by: ByTenant, ByGroup, ByKind or ByQueue.
	// Required.
	By string
	// Queue limits the count to one queue; empty counts every queue.
	Queue string
	// States limits the count to these states; empty counts all.
	States []queue.State
	// MaxScan bounds the jobs read; default DefaultMaxScan.
	MaxScan int
	// MaxCalls bounds the List calls made; default DefaultMaxCalls.
	MaxCalls int
}

// Breakdown is GET /v1/queues/counts: job counts by state, grouped by a
// job field.
type Breakdown struct {
	By string `json:"by"`
	// Scanned is how many jobs were read; Truncated is set when the scan
	// stopped at one of its bounds (jobs read or calls made) before the
	// last job, so every count is a lower bound: there are at least that
	// many.
	Scanned   int  `json:"scanned"`
	Truncated bool `json:"truncated"`
	// Calls is how many List calls the scan made.
	Calls int            `json:"calls"`
	Rows  []BreakdownRow `json:"rows"`
}

// BreakdownRow counts the jobs with one value of the field ("" for jobs
// without one), busiest first: by active, then by total.
type BreakdownRow struct {
	Key    string                `json:"key"`
	Counts map[queue.State]int64 `json:"counts"`
	Total  int64                 `json:"total"`
}

// Validate checks the request, naming the field and the rule.
func (r BreakdownRequest) Validate() error {
	switch r.By {
	case ByTenant, ByGroup, ByKind, ByQueue:
	default:
		return fmt.Errorf("dashboard: by must be one of %s, %s, %s, %s; got %q", ByTenant, ByGroup, ByKind, ByQueue, r.By)
	}
	for _, s := range r.States {
		if !s.Valid() {
			return fmt.Errorf("dashboard: unknown state %q", s)
		}
	}
	if r.MaxScan < 0 {
		return fmt.Errorf("dashboard: max scan must not be negative, got %d", r.MaxScan)
	}
	if r.MaxCalls < 0 {
		return fmt.Errorf("dashboard: max calls must not be negative, got %d", r.MaxCalls)
	}
	return nil
}

// Count reads the selected jobs page by page and counts them. The queue
// API has no per-tenant or per-group index yet, so this is a scan, bounded
// by MaxScan jobs and MaxCalls calls; see Breakdowns for the cached form
// the server uses.
func Count(ctx context.Context, l Lister, req BreakdownRequest) (*Breakdown, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	limit := req.MaxScan
	if limit == 0 {
		limit = DefaultMaxScan
	}
	calls := req.MaxCalls
	if calls == 0 {
		calls = DefaultMaxCalls
	}
	rows := map[string]*BreakdownRow{}
	out := &Breakdown{By: req.By, Rows: []BreakdownRow{}}
	f := queue.ListFilter{Queue: req.Queue, States: req.States, Limit: queue.MaxListLimit}
	for {
		f.Limit = min(queue.MaxListLimit, limit-out.Scanned)
		page, err := l.List(ctx, f)
		if err != nil {
			return nil, err
		}
		out.Calls++
		for _, j := range page.Jobs {
			k := keyOf(j, req.By)
			r := rows[k]
			if r == nil {
				r = &BreakdownRow{Key: k, Counts: map[queue.State]int64{}}
				rows[k] = r
			}
			r.Counts[j.State]++
			r.Total++
		}
		out.Scanned += len(page.Jobs)
		if page.Next == "" {
			break
		}
		if out.Scanned >= limit || out.Calls >= calls {
			out.Truncated = true
			break
		}
		f.Cursor = page.Next
	}
	for _, r := range rows {
		out.Rows = append(out.Rows, *r)
	}
	sort.Slice(out.Rows, func(i, j int) bool { return busier(out.Rows[i], out.Rows[j]) })
	return out, nil
}

func busier(a, b BreakdownRow) bool {
	if x, y := a.Counts[queue.StateActive], b.Counts[queue.StateActive]; x != y {
		return x > y
	}
	if a.Total != b.Total {
		return a.Total > b.Total
	}
	return a.Key < b.Key
}

func keyOf(j *queue.Job, by string) string {
	switch by {
	case ByTenant:
		return j.Tenant
	case ByGroup:
		return j.Group
	case ByKind:
		return j.Kind
	default:
		return j.Queue
	}
}

// scanTimeout bounds one shared scan.
const scanTimeout = 10 * time.Second

// Breakdowns serves Count from a short cache, so a dozen dashboards
// polling every second cost one scan per second, not twelve; concurrent
// callers asking the same thing share one scan.
type Breakdowns struct {
	l   Lister
	now func() time.Time
	ttl time.Duration
	sf  singleflight.Group

	mu    sync.Mutex
	cache map[string]cached
}

type cached struct {
	at  time.Time
	out *Breakdown
}

// NewBreakdowns returns a cache over l that keeps each answer for ttl
// (default 1s); now defaults to time.Now.
func NewBreakdowns(l Lister, ttl time.Duration, now func() time.Time) *Breakdowns {
	if ttl <= 0 {
		ttl = time.Second
	}
	if now == nil {
		now = time.Now
	}
	return &Breakdowns{l: l, now: now, ttl: ttl, cache: map[string]cached{}}
}

// Count is Count, answered from the cache when a scan for the same
// request is younger than the ttl.
func (b *Breakdowns) Count(ctx context.Context, req BreakdownRequest) (*Breakdown, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	key := cacheKey(req)
	b.mu.Lock()
	c, ok := b.cache[key]
	b.mu.Unlock()
	if ok && b.now().Sub(c.at) < b.ttl {
		return c.out, nil
	}
	v, err, _ := b.sf.Do(key, func() (any, error) {
		// A scan outlives a caller that left: it is shared and cached.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), scanTimeout)
		defer cancel()
		out, err := Count(sctx, b.l, req)
		if err != nil {
			return nil, err
		}
		b.store(key, out)
		return out, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*Breakdown), nil
}

func (b *Breakdowns) store(key string, out *Breakdown) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	for k, c := range b.cache { // drop stale answers: the key space is small but open
		if now.Sub(c.at) >= b.ttl {
			delete(b.cache, k)
		}
	}
	b.cache[key] = cached{at: now, out: out}
}

func cacheKey(r BreakdownRequest) string {
	states := make([]string, len(r.States))
	for i, s := range r.States {
		states[i] = string(s)
	}
	sort.Strings(states)
	return fmt.Sprintf("%s\x00%s\x00%s\x00%d\x00%d", r.By, r.Queue, strings.Join(states, ","), r.MaxScan, r.MaxCalls)
}
