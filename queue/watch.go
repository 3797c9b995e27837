package queue

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/sluicehq/sluice/queue/backend"
)

// The watcher's rhythm. A backend with an event log wakes it by its own
// notification; these bound how long a read blocks and how often it
// checks the watched jobs again in case an event was missed. A backend
// without one is polled: one read per watched job (not per waiter) per
// pollEvery.
const (
	watchBlock   = 5 * time.Second
	watchRecheck = 30 * time.Second
	pollEvery    = 500 * time.Millisecond
	watchPage    = 512
)

// hub holds a client's watcher, made on first use.
type hub struct {
	mu sync.Mutex
	w  *watcher
}

func (h *hub) get(c *Client) *watcher {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.w == nil {
		f := c.b.Features()
		// A router's log is its default backend's: the jobs of its other
		// routes are polled.
		h.w = &watcher{b: c.b, log: f.Events, groups: f.Groups, poll: f.Events == nil || f.Router != nil,
			jobs: map[string]map[*waiter]struct{}{}, grps: map[string]map[*waiter]struct{}{}, subs: map[*subscriber]struct{}{}}
	}
	return h.w
}

// watcher is the one reader of a client's event log (or, without one, the
// one poller of its watched jobs), fanning out to every waiter and
// subscriber. It runs while it has any and stops when the last one leaves.
type watcher struct {
	b      backend.Backend
	log    backend.EventLog
	groups backend.GroupBackend
	poll   bool // read every watched job each pollEvery

	mu      sync.Mutex
	jobs    map[string]map[*waiter]struct{} // by job id
	grps    map[string]map[*waiter]struct{} // by group id
	subs    map[*subscriber]struct{}
	cursor  string // the last event dispatched
	running bool
	stopRd  context.CancelFunc // interrupts the read under way
	checked time.Time          // when every watched job was last read
}

// waiter is one Wait call: it receives what the watcher read.
type waiter struct {
	ch chan waited // 1 slot: the newest replaces an unread one
}

type waited struct {
	job   *Job
	group *GroupProgress
	err   error
}

func (wt *waiter) send(v waited) {
	for {
		select {
		case wt.ch <- v:
			return
		default:
		}
		select {
		case <-wt.ch:
		default:
		}
	}
}

// start runs the loop unless it runs; the cursor is read first, so that
// any event after the caller's next read is seen. Called with mu held.
func (w *watcher) start(ctx context.Context) error {
	if w.running {
		return nil
	}
	if w.log != nil {
		id, err := w.log.LastEventID(ctx)
		if err != nil {
			return err
		}
		w.cursor = id
	}
	w.running, w.checked = true, time.Now()
	go w.loop()
	return nil
}

func (w *watcher) idle() bool { return len(w.jobs)+len(w.grps)+len(w.subs) == 0 }

// leave ends the loop's read when nobody is left. Called with mu held.
func (w *watcher) leave() {
	if w.idle() && w.stopRd != nil {
		w.stopRd()
	}
}

func (w *watcher) loop() {
	for {
		w.mu.Lock()
		if w.idle() {
			w.running, w.stopRd = false, nil
			w.mu.Unlock()
			return
		}
		ctx, cancel := context.WithCancel(context.Background())
		w.stopRd = cancel
		cursor := w.cursor
		recheck := time.Since(w.checked) >= watchRecheck || w.poll
		w.mu.Unlock()
		if w.log != nil {
			w.readLog(ctx, cursor)
		} else {
			sleep(ctx, pollEvery)
		}
		if recheck && ctx.Err() == nil {
			w.refresh(ctx, nil, nil)
		}
		cancel()
	}
}

// readLog reads the next events and dispatches them; a fault is
// followed by a pause and a read of every watched job.
func (w *watcher) readLog(ctx context.Context, cursor string) {
	block := watchBlock
	if w.poll {
		block = pollEvery
	}
	batch, err := w.log.ReadEvents(ctx, cursor, watchPage, block)
	if err != nil {
		if ctx.Err() == nil {
			sleep(ctx, time.Second)
			w.mu.Lock()
			w.checked = time.Time{}
			w.mu.Unlock()
		}
		return
	}
	if len(batch.Events) == 0 {
		return
	}
	jobs, grps := map[string]bool{}, map[string]bool{}
	w.mu.Lock()
	w.cursor = batch.Events[len(batch.Events)-1].ID
	for _, e := range batch.Events {
		switch {
		case e.Type == EventGroupCompleted:
			grps[e.Group] = w.grps[e.Group] != nil
		case e.State.Final() || e.Type == EventJobCompleted || e.Type == EventJobFailed || e.Type == EventJobCancelled:
			jobs[e.JobID] = w.jobs[e.JobID] != nil
			if e.Group != "" && w.grps[e.Group] != nil {
				grps[e.Group] = true
			}
		}
	}
	for s := range w.subs {
		s.offer(batch.Events)
	}
	w.mu.Unlock()
	w.refresh(ctx, jobs, grps)
}

// refresh reads the jobs and groups named (every watched one when both
// are nil), once each, and hands each result to all of its waiters.
func (w *watcher) refresh(ctx context.Context, jobs, grps map[string]bool) {
	w.mu.Lock()
	if jobs == nil && grps == nil {
		jobs, grps = map[string]bool{}, map[string]bool{}
		for id := range w.jobs {
			jobs[id] = true
		}
		for id := range w.grps {
			grps[id] = true
		}
		w.checked = time.Now()
	}
	w.mu.Unlock()
	for id, watched := range jobs {
		if watched {
			j, err := w.b.Get(ctx, id)
			w.fan(w.jobs, id, waited{job: j, err: err})
		}
	}
	for id, watched := range grps {
		if watched && w.groups != nil {
			g, err := w.groups.Group(ctx, id)
			w.fan(w.grps, id, waited{group: g, err: err})
		}
	}
}

// fan hands v to every waiter of id in m, unless the read was cut short.
func (w *watcher) fan(m map[string]map[*waiter]struct{}, id string, v waited) {
	if v.err != nil && (errors.Is(v.err, context.Canceled) || errors.Is(v.err, context.DeadlineExceeded)) {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for wt := range m[id] {
		wt.send(v)
	}
}

// join registers wt on id in m and makes sure the loop runs.
func (w *watcher) join(ctx context.Context, m map[string]map[*waiter]struct{}, id string, wt *waiter) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.start(ctx); err != nil {
		return err
	}
	if m[id] == nil {
		m[id] = map[*waiter]struct{}{}
	}
	m[id][wt] = struct{}{}
	return nil
}

func (w *watcher) part(m map[string]map[*waiter]struct{}, id string, wt *waiter) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(m[id], wt)
	if len(m[id]) == 0 {
		delete(m, id)
	}
	w.leave()
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// WatchStats counts what a client's shared watcher follows.
type WatchStats struct {
	// Jobs and Groups are how many distinct jobs and groups Wait and
	// WaitGroup calls are waiting on; Waiters how many calls.
	Jobs, Groups, Waiters int
	// Subscribers is how many subscriptions are open.
	Subscribers int
}

// Watching returns what the client's Wait, WaitGroup and Subscribe calls
// are following now, for metrics and tests.
func (c *Client) Watching() WatchStats {
	w := c.hub.get(c)
	w.mu.Lock()
	defer w.mu.Unlock()
	st := WatchStats{Jobs: len(w.jobs), Groups: len(w.grps), Subscribers: len(w.subs)}
	for _, m := range []map[string]map[*waiter]struct{}{w.jobs, w.grps} {
		for _, ws := range m {
			st.Waiters += len(ws)
		}
	}
	return st
}
