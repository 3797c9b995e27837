package amqpqueue

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// Backend is the RabbitMQ lane: a backend.Backend on durable broker queues.
// It is safe for concurrent use; several processes may share the broker
// queues (each leases through its own consumers).
type Backend struct {
	opts Options
	clk  clock.Clock
	log  *slog.Logger
	rec  Recorder
	// memRec: rec is a MemoryRecorder, which running jobs need not be
	// recorded in (Get finds them among the leases).
	memRec bool

	pub    *link // publishing connection (enqueue, retries, declares)
	sub    *link // consuming connection (deliveries, acks)
	topo   *topology
	pubs   *publishers
	subs   subscribers
	closed atomic.Bool
	// stopCtx ends the consumers, which Close waits for (cwg) before
	// closing makes the links close the connections (wg).
	stopCtx context.Context
	stop    context.CancelFunc
	cwg     sync.WaitGroup
	closing chan struct{}
	wg      sync.WaitGroup

	idPrefix  string
	idSeq     atomic.Uint64
	instances atomic.Uint64

	cmu       sync.Mutex
	consumers map[string]*consumer
	stopped   bool // no new consumers (cmu)

	hmu  sync.Mutex
	held map[string]*held // by token
	byID map[string]*held

	// sched schedules the jobs with a tenant or a group (Options.Scheduler;
	// nil: none); turn alternates which of it and the broker a Lease asks
	// first, and pauses are the queue pauses in force (scheduled.go).
	sched  backend.Backend
	turn   atomic.Uint32
	pauses queuePauses
}

var (
	_ backend.Backend  = (*Backend)(nil)
	_ backend.Notifier = (*Backend)(nil)
)

// name is how errors name this backend.
const name = "amqpqueue"

// New connects to the broker at url (amqp://user:pass@host:port/vhost) and
// returns the lane. It opens two connections, one to publish and one to
// consume (so that the broker's flow control on publishers never delays
// acknowledgements), and declares Options.Queues. It fails at once when the
// broker cannot be reached; later losses are healed in the background.
func New(url string, opts Options) (*Backend, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	b := &Backend{
		opts: opts, clk: opts.Clock, log: opts.Logger, rec: opts.Recorder,
		closing:   make(chan struct{}),
		idPrefix:  hex.EncodeToString(rnd[:]),
		consumers: map[string]*consumer{},
		held:      map[string]*held{},
		byID:      map[string]*held{},
		sched:     opts.Scheduler,
	}
	_, b.memRec = opts.Recorder.(*MemoryRecorder)
	b.subs.subs = map[*subscriber]struct{}{}
	b.stopCtx, b.stop = context.WithCancel(context.Background())
	b.pub = newLink("publish", url, opts, b.closing)
	b.sub = newLink("consume", url, opts, b.closing)
	b.topo = newTopology(b)
	b.pubs = newPublishers(b, opts.Publishers)
	if err := b.pub.dial(); err != nil {
		return nil, err
	}
	if err := b.sub.dial(); err != nil {
		b.pub.cur.Close()
		return nil, err
	}
	for _, l := range []*link{b.pub, b.sub} {
		b.wg.Add(1)
		go func() { defer b.wg.Done(); l.run() }()
	}
	for _, q := range opts.Queues {
		if err := b.topo.ensure(context.Background(), b.mainSpec(q)); err != nil {
			b.Close()
			return nil, err
		}
	}
	return b, nil
}

// Close stops consuming and closes both connections; the broker takes back
// every delivery not yet acknowledged, to be redelivered. Calls after Close
// return queue.ErrClosed. Close waits for the backend's goroutines.
func (b *Backend) Close() error {
	if b.closed.Swap(true) {
		return nil
	}
	b.cmu.Lock()
	b.stopped = true
	b.cmu.Unlock()
	b.stop()
	b.cwg.Wait()
	close(b.closing)
	b.wg.Wait()
	return nil
}

// Features implements backend.Backend. The lane has delays (bucketed, on
// the broker's clock) and, in priority mode, priorities, and it notifies
// workers; with a Scheduler it has the Scheduler's tenant scheduling,
// groups and tenant listing. It lacks unique keys, listing, cancelling
// jobs that have not started, strict ordering, atomic batches, retrying
// finished jobs (a finished job's message is gone from the broker) and an
// outbox, and without a Scheduler tenant scheduling and groups.
func (b *Backend) Features() backend.Features {
	c := queue.NewCapabilities(queue.CapDelay)
	if b.opts.Priorities > 0 {
		c |= queue.NewCapabilities(queue.CapPriority)
	}
	f := backend.Features{Name: name, Capabilities: c, Notify: b}
	if b.sched != nil {
		sf := b.sched.Features()
		f.Tenants = schedTenants{sf.Tenants, b}
		f.Groups = schedGroups{sf.Groups}
		f.TenantList = sf.TenantList
	}
	return f
}

func (b *Backend) newID() string {
	return b.idPrefix + strconv.FormatUint(b.idSeq.Add(1), 36)
}

func (b *Backend) record(j *queue.Job) {
	if err := b.rec.Record(context.Background(), j); err != nil {
		b.log.Warn("amqpqueue: recording job state failed", "job", j.ID, "state", j.State, "err", err)
	}
}

// Get returns the job: from this process's leases while it runs here,
// otherwise its latest recorded state. A job the recorder never saw or has
// dropped (retention, bounds) is queue.ErrNotFound.
func (b *Backend) Get(ctx context.Context, id string) (*queue.Job, error) {
	if sid, ok := b.schedID(id); ok && !b.closed.Load() {
		j, err := b.sched.Get(ctx, sid)
		return outer(j), err
	}
	if b.closed.Load() {
		return nil, queue.ErrClosed
	}
	b.hmu.Lock()
	h, ok := b.byID[id]
	var j queue.Job
	if ok {
		j = *h.job
	}
	b.hmu.Unlock()
	if ok {
		return &j, nil
	}
	return b.rec.Lookup(ctx, id)
}

// Cancel cancels a job running under a lease of this process (its worker
// learns of it on its next Extend). A job already finished answers as the
// other backends do (cancelled: no-op; completed, failed: ErrJobFinished).
// Any other job (waiting in the broker, or running in another process)
// cannot be reached: the error matches queue.ErrUnsupported.
func (b *Backend) Cancel(ctx context.Context, id string) (*queue.Job, error) {
	if sid, ok := b.schedID(id); ok && !b.closed.Load() {
		j, err := b.sched.Cancel(ctx, sid)
		return outer(j), err
	}
	if b.closed.Load() {
		return nil, queue.ErrClosed
	}
	b.hmu.Lock()
	h, ok := b.byID[id]
	var j queue.Job
	if ok {
		h.job.CancelRequested = true
		h.job.UpdatedAt = b.clk.Now()
		j = *h.job
	}
	b.hmu.Unlock()
	if ok {
		b.record(&j)
		return &j, nil
	}
	rj, err := b.rec.Lookup(ctx, id)
	if err != nil {
		return nil, err
	}
	switch rj.State {
	case queue.StateCancelled:
		return rj, nil
	case queue.StateCompleted, queue.StateFailed:
		return rj, queue.ErrJobFinished
	}
	return nil, &queue.UnsupportedError{Backend: name, Feature: queue.CapCancelPending}
}

// Cleanup deletes recorded finished jobs past their retention, when the
// Recorder implements RecordCleaner; otherwise it deletes nothing (the
// broker keeps no finished jobs, and dead letters expire by
// Options.DeadLetterTTL).
func (b *Backend) Cleanup(ctx context.Context, req backend.CleanupRequest) (int, error) {
	if b.closed.Load() {
		return 0, queue.ErrClosed
	}
	n := 0
	if b.sched != nil {
		var err error
		if n, err = b.sched.Cleanup(ctx, req); err != nil {
			return n, err
		}
	}
	if c, ok := b.rec.(RecordCleaner); ok {
		m, err := c.Cleanup(ctx, req)
		return n + m, err
	}
	return n, nil
}

// Enqueue publishes one persistent message per spec and returns once the
// broker has confirmed every one. A spec asking for a feature the lane
// lacks (see Features) fails the whole call before anything is
// published, with an error matching queue.ErrUnsupported. With a
// Scheduler, the specs that name a tenant or a group are stored there
// first, in one call (a full backlog refuses them before anything is
// published). The batch is not atomic: when the call fails, some of its
// jobs may have been stored.
func (b *Backend) Enqueue(ctx context.Context, specs []queue.JobSpec) ([]queue.Enqueued, error) {
	if b.closed.Load() {
		return nil, queue.ErrClosed
	}
	if err := b.Features().CheckSpecs(specs); err != nil {
		return nil, err
	}
	if b.sched != nil && slices.ContainsFunc(specs, scheduled) {
		return b.enqueueSplit(ctx, specs) // scheduled.go
	}
	return b.enqueueBroker(ctx, specs)
}

// enqueueBroker publishes the specs as messages.
func (b *Backend) enqueueBroker(ctx context.Context, specs []queue.JobSpec) ([]queue.Enqueued, error) {
	now := b.clk.Now()
	jobs := make([]queue.Job, len(specs))
	msgs := make([]outMsg, len(specs))
	for i, s := range specs {
		if err := checkQueueName(b.opts.Prefix, s.Queue); err != nil {
			return nil, err
		}
		j := &jobs[i]
		*j = queue.Job{JobSpec: s, ID: b.newID(), State: queue.StatePending, CreatedAt: now, UpdatedAt: now}
		if j.MaxAttempts <= 0 {
			j.MaxAttempts = queue.DefaultMaxAttempts
		}
		to := b.mainSpec(s.Queue)
		if s.RunAt.After(now) {
			j.State = queue.StateScheduled
			to = b.delaySpec(s.Queue, b.bucket(s.RunAt.Sub(now)))
		}
		msgs[i] = outMsg{to: to, pub: b.publishing(j)}
	}
	// Recorded before they are published: a consumer may lease and finish
	// a job before the broker's confirm comes back, and a record made
	// after that would put it back to pending. A batch that then fails to
	// publish leaves pending records for jobs nobody holds the id of,
	// which the recorder drops in time (a MemoryRecorder by its bounds, a
	// RedisRecorder after LiveFor).
	for i := range jobs {
		b.record(&jobs[i])
	}
	if err := b.pubs.publish(ctx, msgs); err != nil {
		return nil, err
	}
	out := make([]queue.Enqueued, len(jobs))
	for i := range jobs {
		j := jobs[i]
		out[i] = queue.Enqueued{Job: &j}
	}
	return out, nil
}

// errStopped is the cause used when an instance dies during a publish.
var errStopped = errors.New("amqpqueue: consumer channel closed")
