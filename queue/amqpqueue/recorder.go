package amqpqueue

import (
	"container/list"
	"context"
	"sync"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// Recorder keeps the latest known state of the lane's jobs, so that Get,
// Cancel and the dashboard can answer for them. The broker only holds jobs
// that still have to run; a recorder is where the outcome (completed with
// its result, failed with its error, cancelled) remains afterwards.
//
// The backend records every transition it makes: enqueued (pending or
// scheduled), leased (active), retrying, snoozed, given back and final.
// Recording is best effort: a failing recorder is logged, never fails the
// transition, because the job itself is safe in the broker. A Recorder
// shared by all processes (on Redis, say) lets any process answer for any
// job; the default MemoryRecorder knows only what its own process saw.
type Recorder interface {
	// Record stores j as the job's latest state. j is not modified
	// afterwards; the recorder may keep it.
	Record(ctx context.Context, j *queue.Job) error
	// Lookup returns the job's latest recorded state, or an error
	// matching queue.ErrNotFound. The caller may modify the result.
	Lookup(ctx context.Context, id string) (*queue.Job, error)
}

// RecordCleaner is implemented by recorders that delete finished jobs once
// their retention has passed; Backend.Cleanup calls it.
type RecordCleaner interface {
	Cleanup(ctx context.Context, req backend.CleanupRequest) (int, error)
}

// StateCounter is implemented by recorders that count the jobs they keep
// by queue and state; Stats takes completed and cancelled counts from it.
type StateCounter interface {
	CountStates(ctx context.Context) (map[string]map[queue.State]int64, error)
}

// Defaults of MemoryRecorderOptions.
const (
	DefaultRecorderJobs  = 100_000
	DefaultRecorderBytes = 64 << 20
)

// MemoryRecorderOptions configures a MemoryRecorder. The zero value is the
// default.
type MemoryRecorderOptions struct {
	// MaxJobs bounds how many jobs are kept; the least recently updated
	// go first. Default 100,000.
	MaxJobs int
	// MaxBytes bounds the payloads, results and errors kept, in bytes;
	// default 64 MiB.
	MaxBytes int
	// Clock tells Cleanup the time; default the real clock.
	Clock clock.Clock
}

// MemoryRecorder is a Recorder in process memory, bounded by count and by
// bytes (least recently updated jobs are evicted first) and by retention
// (Cleanup). It is safe for concurrent use.
type MemoryRecorder struct {
	opts MemoryRecorderOptions

	mu     sync.Mutex
	jobs   map[string]*list.Element // of *recorded
	order  *list.List               // least recently updated first
	bytes  int
	counts map[string]*stateCounts // by queue
}

type recorded struct {
	job  queue.Job
	size int
	cnt  *stateCounts // counts of job.Queue
}

// stateCounts counts kept jobs by state, indexed like queue.States.
type stateCounts [8]int64

func stateIndex(s queue.State) int {
	for i, k := range queue.States {
		if k == s {
			return i
		}
	}
	return 0
}

var (
	_ Recorder      = (*MemoryRecorder)(nil)
	_ RecordCleaner = (*MemoryRecorder)(nil)
	_ StateCounter  = (*MemoryRecorder)(nil)
)

// NewMemoryRecorder returns an empty MemoryRecorder.
func NewMemoryRecorder(opts MemoryRecorderOptions) *MemoryRecorder {
	if opts.MaxJobs <= 0 {
		opts.MaxJobs = DefaultRecorderJobs
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultRecorderBytes
	}
	opts.Clock = clock.Or(opts.Clock)
	return &MemoryRecorder{opts: opts, jobs: map[string]*list.Element{}, order: list.New(), counts: map[string]*stateCounts{}}
}

func sizeOf(j *queue.Job) int {
	n := 256 + len(j.ID) + len(j.Payload) + len(j.Result) + len(j.LastError)
	for _, e := range j.Errors {
		n += 48 + len(e.Error)
	}
	return n
}

// Record stores j, evicting the least recently updated jobs beyond the
// bounds. It never fails.
func (r *MemoryRecorder) Record(_ context.Context, j *queue.Job) error {
	size := sizeOf(j)
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.jobs[j.ID]; ok {
		rec := e.Value.(*recorded)
		r.bytes -= rec.size
		rec.cnt[stateIndex(rec.job.State)]--
		if rec.job.Queue != j.Queue {
			rec.cnt = r.countsOf(j.Queue)
		}
		rec.job, rec.size = *j, size
		rec.cnt[stateIndex(j.State)]++
		r.order.MoveToBack(e)
	} else {
		rec := &recorded{job: *j, size: size, cnt: r.countsOf(j.Queue)}
		rec.cnt[stateIndex(j.State)]++
		r.jobs[j.ID] = r.order.PushBack(rec)
	}
	r.bytes += size
	for r.order.Len() > r.opts.MaxJobs || (r.bytes > r.opts.MaxBytes && r.order.Len() > 1) {
		r.remove(r.order.Front())
	}
	return nil
}

func (r *MemoryRecorder) countsOf(q string) *stateCounts {
	c := r.counts[q]
	if c == nil {
		c = new(stateCounts)
		r.counts[q] = c
	}
	return c
}

func (r *MemoryRecorder) remove(e *list.Element) {
	rec := r.order.Remove(e).(*recorded)
	delete(r.jobs, rec.job.ID)
	r.bytes -= rec.size
	rec.cnt[stateIndex(rec.job.State)]--
	if *rec.cnt == (stateCounts{}) {
		delete(r.counts, rec.job.Queue)
	}
}

// CountStates returns how many kept jobs each queue has in each state.
func (r *MemoryRecorder) CountStates(context.Context) (map[string]map[queue.State]int64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]map[queue.State]int64, len(r.counts))
	for q, c := range r.counts {
		byState := map[queue.State]int64{}
		for i, n := range c {
			if n != 0 {
				byState[queue.States[i]] = n
			}
		}
		out[q] = byState
	}
	return out, nil
}

// Lookup returns a copy of the job's latest state, or queue.ErrNotFound.
func (r *MemoryRecorder) Lookup(_ context.Context, id string) (*queue.Job, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.jobs[id]
	if !ok {
		return nil, queue.ErrNotFound
	}
	j := e.Value.(*recorded).job
	return &j, nil
}

// Len returns how many jobs are kept.
func (r *MemoryRecorder) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.order.Len()
}

// Cleanup deletes finished jobs of req.Queues (all when empty) whose
// FinishedAt is at or before now minus their state's retention, at most
// req.Limit (default 1000). It scans every kept job, which MaxJobs bounds.
func (r *MemoryRecorder) Cleanup(_ context.Context, req backend.CleanupRequest) (int, error) {
	limit := req.Limit
	if limit <= 0 {
		limit = backend.DefaultBatchLimit
	}
	want := make(map[string]bool, len(req.Queues))
	for _, q := range req.Queues {
		want[q] = true
	}
	now := r.opts.Clock.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for e := r.order.Front(); e != nil && n < limit; {
		next := e.Next()
		j := &e.Value.(*recorded).job
		keep, final := req.Retention.For(j.State)
		if final && keep >= 0 && (len(want) == 0 || want[j.Queue]) && !j.FinishedAt.After(now.Add(-keep)) {
			r.remove(e)
			n++
		}
		e = next
	}
	return n, nil
}
