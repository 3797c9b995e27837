package server

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/sluicehq/sluice/queue/overload"
	"github.com/sluicehq/sluice/server/config"
)

// loadGate runs the overload monitor queues.overload configures and
// answers for it (queue.LoadMonitor). A config change replaces the
// monitor: the old one stops, the new one starts sampling at once.
type loadGate struct {
	log *slog.Logger

	mu      sync.Mutex
	cfg     config.Overload
	mon     *overload.Monitor
	runCtx  context.Context // set by start; nil before
	stopMon context.CancelFunc
	wg      sync.WaitGroup
}

func newLoadGate(log *slog.Logger) *loadGate { return &loadGate{log: log} }

// Overloaded reports the current monitor's state; never overloaded while
// the monitor is off.
func (g *loadGate) Overloaded() (bool, string) {
	g.mu.Lock()
	m := g.mon
	g.mu.Unlock()
	if m == nil {
		return false, ""
	}
	return m.Overloaded()
}

// update applies o: a changed config replaces the monitor.
func (g *loadGate) update(o config.Overload) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.mon != nil && sameMonitor(o, g.cfg) {
		return // a new monitor would lose its CPU baseline and hysteresis state
	}
	g.stopLocked()
	g.cfg, g.mon = o, nil
	if !o.Enabled {
		return
	}
	lib := o.Library()
	lib.Logger = g.log
	m, err := overload.New(lib)
	if err != nil { // validated: out of range values never get here
		g.log.Error("server: queues.overload not applied", "error", err)
		return
	}
	g.mon = m
	g.log.Info("server: overload monitor on", "source", lib.Source.Name(), "cpu", o.CPU, "memory", o.Memory)
	if g.runCtx != nil {
		g.startLocked()
	}
}

// start runs the monitor (and every later one) until ctx ends; wg is done
// once the last one has stopped.
func (g *loadGate) start(ctx context.Context, wg *sync.WaitGroup) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.runCtx = ctx
	if g.mon != nil {
		g.startLocked()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-ctx.Done()
		g.mu.Lock()
		g.stopLocked()
		g.mu.Unlock()
		g.wg.Wait()
	}()
}

func (g *loadGate) startLocked() {
	ctx, cancel := context.WithCancel(g.runCtx)
	g.stopMon = cancel
	m := g.mon
	g.wg.Add(1)
	go func() { defer g.wg.Done(); _ = m.Run(ctx) }()
}

func (g *loadGate) stopLocked() {
	if g.stopMon != nil {
		g.stopMon()
		g.stopMon = nil
	}
}

// waitClear waits, up to wait, for the overload to clear. It returns the
// wait left once clear (0 or more), or -1 when the wait ended, ctx ended
// or stopping closed while still overloaded.
func (g *loadGate) waitClear(ctx context.Context, wait time.Duration, stopping <-chan struct{}) time.Duration {
	deadline := time.Now().Add(wait)
	for {
		over, _ := g.Overloaded()
		left := time.Until(deadline)
		if !over {
			return max(left, 0)
		}
		if left <= 0 {
			return -1
		}
		t := time.NewTimer(min(left, leasePoll))
		select {
		case <-ctx.Done():
			t.Stop()
			return -1
		case <-stopping:
			t.Stop()
			return -1
		case <-t.C:
		}
	}
}

// sameMonitor reports whether a and b configure the same monitor
// (pause_leasing is read at each lease, not by the monitor).
func sameMonitor(a, b config.Overload) bool {
	a.PauseLeasing, b.PauseLeasing = nil, nil
	return a == b
}
