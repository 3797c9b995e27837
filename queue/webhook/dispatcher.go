package webhook

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"go.opentelemetry.io/otel/trace"
)

// errStopped is the cause of a round's context ending at shutdown.
var errStopped = errors.New("webhook: dispatcher stopped")

// Dispatcher delivers the events of a backend's outbox to subscriptions.
// Several dispatchers, in one process or many, may share an outbox: claims
// keep them from sending the same event at once.
type Dispatcher struct {
	ob     backend.Outbox
	cfg    Config
	client *http.Client
	subs   []Subscription

	mu       sync.Mutex
	disabled map[string]bool // answered 410 Gone

	hookCache ttlCache // group webhooks and tenant secrets (Config.Jobs)
	tracer    trace.Tracer

	running atomic.Bool
}

// New returns a dispatcher on ob configured by cfg, or an error naming the
// first bad field.
func New(ob backend.Outbox, cfg Config) (*Dispatcher, error) {
	if ob == nil {
		return nil, errors.New("webhook: New needs an outbox")
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	d := &Dispatcher{
		ob: ob, cfg: cfg, client: NewClient(cfg.Guard, cfg.Resolve),
		subs: append([]Subscription(nil), cfg.Subscriptions...), disabled: map[string]bool{},
	}
	if cfg.Jobs != nil {
		d.hookCache.ttl = cfg.Jobs.CacheFor
	}
	if cfg.TracerProvider != nil {
		d.tracer = cfg.TracerProvider.Tracer(tracerName)
	}
	return d, nil
}

// Disabled returns the names of the subscriptions disabled after a 410
// Gone answer.
func (d *Dispatcher) Disabled() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]string, 0, len(d.disabled))
	for n := range d.disabled {
		out = append(out, n)
	}
	return out
}

// Enable sends events to a subscription disabled by a 410 again.
func (d *Dispatcher) Enable(name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.disabled, name)
}

func (d *Dispatcher) disable(s Subscription) {
	d.mu.Lock()
	was := d.disabled[s.Name]
	d.disabled[s.Name] = true
	d.mu.Unlock()
	if !was {
		d.cfg.Logger.Warn("webhook: receiver answered 410 Gone; subscription disabled", "dispatcher", d.cfg.ID, "subscription", s.Name)
		if d.cfg.OnGone != nil {
			d.cfg.OnGone(s)
		}
	}
}

// targets returns the subscriptions c still has to go to: they want its
// type, are enabled, and are not finished with it.
func (d *Dispatcher) targets(c backend.ClaimedEvent) []Subscription {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []Subscription
	for _, s := range d.subs {
		if s.Wants(c.Event.Type) && !d.disabled[s.Name] && !c.Progress[s.Name].Final {
			out = append(out, s)
		}
	}
	return out
}

// DispatchOnce claims up to Concurrency due events, delivers each once to
// the subscriptions still waiting for it, and settles it (acknowledged, or
// released to be retried after its backoff) before returning how many
// events it claimed. It is Run's step without the loop, for tests and for
// callers that schedule delivery themselves.
func (d *Dispatcher) DispatchOnce(ctx context.Context) (int, error) {
	cs, err := d.ob.ClaimEvents(ctx, d.cfg.Concurrency, d.cfg.LeaseFor)
	if err != nil {
		return 0, d.claimError(err)
	}
	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Add(1)
		go func() { defer wg.Done(); d.handle(ctx, c) }()
	}
	wg.Wait()
	return len(cs), nil
}

func (d *Dispatcher) claimError(err error) error {
	if errors.Is(err, queue.ErrOutboxOff) {
		return fmt.Errorf("webhook: nothing to deliver: %w (open the backend with its outbox on)", err)
	}
	return err
}

// Run delivers events until ctx ends, then stops claiming, lets deliveries
// in flight finish for up to ShutdownTimeout, cancels the rest (their
// events are released at once, the cancelled attempts not counted) and
// returns nil. Alongside, it prunes the delivery log once an hour.
//
// Backend faults are logged and retried, never fatal. Run returns an error
// at once if the dispatcher is already running or the backend's outbox is
// off. A panic in OnGone is not recovered.
func (d *Dispatcher) Run(ctx context.Context) error {
	if !d.running.CompareAndSwap(false, true) {
		return errors.New("webhook: dispatcher is already running")
	}
	defer d.running.Store(false)
	defer d.client.CloseIdleConnections()
	ctx, cancel := context.WithCancel(ctx) // also ends the pruner when the loop fails
	var bg sync.WaitGroup
	bg.Add(1)
	go func() { defer bg.Done(); d.prune(ctx) }()

	rounds, stop := context.WithCancelCause(context.WithoutCancel(ctx))
	var inflight sync.WaitGroup
	err := d.loop(ctx, rounds, &inflight)
	cancel()
	if !waitGroup(&inflight, d.cfg.Clock, d.cfg.ShutdownTimeout) {
		stop(errStopped)
		inflight.Wait()
	}
	stop(nil)
	bg.Wait()
	return err
}

// loop claims events while there are free slots and ctx lasts, and hands
// each to a goroutine running under rounds. It returns an error only when
// the outbox is off.
func (d *Dispatcher) loop(ctx, rounds context.Context, inflight *sync.WaitGroup) error {
	cfg := d.cfg
	done := make(chan struct{}, cfg.Concurrency)
	busy := 0
	for ctx.Err() == nil {
		for drained := false; !drained; {
			select {
			case <-done:
				busy--
			default:
				drained = true
			}
		}
		free := cfg.Concurrency - busy
		if free > 0 {
			cs, err := d.ob.ClaimEvents(ctx, free, cfg.LeaseFor)
			if errors.Is(err, queue.ErrOutboxOff) {
				return d.claimError(err)
			}
			if err != nil && ctx.Err() == nil {
				cfg.Logger.Error("webhook: claiming events failed", "dispatcher", cfg.ID, "err", err)
			}
			for _, c := range cs {
				busy++
				inflight.Add(1)
				go func() {
					defer inflight.Done()
					d.handle(rounds, c)
					done <- struct{}{}
				}()
			}
			if err == nil && len(cs) == free {
				continue // there may be more due right now
			}
		}
		t := cfg.Clock.NewTimer(cfg.PollInterval)
		select {
		case <-ctx.Done():
		case <-done:
			busy--
		case <-t.C():
		}
		t.Stop()
	}
	return nil
}

// prune deletes old delivery log entries once an hour until ctx ends.
func (d *Dispatcher) prune(ctx context.Context) {
	if d.cfg.LogRetention < 0 {
		return
	}
	for {
		for ctx.Err() == nil {
			n, err := d.ob.PruneDeliveries(ctx, d.cfg.LogRetention, backend.DefaultBatchLimit)
			if err != nil && ctx.Err() == nil {
				d.cfg.Logger.Error("webhook: pruning the delivery log failed", "dispatcher", d.cfg.ID, "err", err)
			}
			if err != nil || n < backend.DefaultBatchLimit {
				break
			}
		}
		t := d.cfg.Clock.NewTimer(time.Hour)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

// waitGroup waits for wg up to d on clk and reports whether it finished.
func waitGroup(wg *sync.WaitGroup, clk clock.Clock, d time.Duration) bool {
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	t := clk.NewTimer(d)
	defer t.Stop()
	select {
	case <-finished:
		return true
	case <-t.C():
		return false
	}
}
