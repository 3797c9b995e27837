package flow_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
)

// goid returns the current goroutine's id, to tell whether fn ran on the
// caller's goroutine.
func goid() uint64 {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	buf = bytes.TrimPrefix(buf, []byte("goroutine "))
	id, _ := strconv.ParseUint(string(buf[:bytes.IndexByte(buf, ' ')]), 10, 64)
	return id
}

// gauge tracks how many calls run at once and the most seen.
type gauge struct{ now, peak atomic.Int64 }

func (g *gauge) enter() {
	n := g.now.Add(1)
	for {
		p := g.peak.Load()
		if n <= p || g.peak.CompareAndSwap(p, n) {
			return
		}
	}
}

func (g *gauge) leave() { g.now.Add(-1) }

func TestMapKeepsInputOrder(t *testing.T) {
	t.Parallel()
	const n = 10
	gates := make([]chan struct{}, n)
	started := make(chan int, n)
	for i := range gates {
		gates[i] = make(chan struct{})
	}
	items := make([]int, n)
	for i := range items {
		items[i] = i
	}
	done := make(chan []string, 1)
	go func() {
		got, err := flow.Map(context.Background(), items, func(_ context.Context, i int) (string, error) {
			started <- i
			<-gates[i]
			return fmt.Sprint("v", i), err0()
		}, flow.Workers(n))
		if err != nil {
			t.Errorf("Map: %v", err)
		}
		done <- got
	}()
	for range n {
		<-started // all ten run at once
	}
	for i := n - 1; i >= 0; i-- {
		close(gates[i]) // finish in reverse order
	}
	got := <-done
	for i, v := range got {
		if want := fmt.Sprint("v", i); v != want {
			t.Fatalf("results[%d] = %q, want %q (results %v)", i, v, want, got)
		}
	}
}

func err0() error { return nil }

func TestMapEmpty(t *testing.T) {
	t.Parallel()
	called := false
	got, err := flow.Map(context.Background(), []int(nil), func(context.Context, int) (int, error) {
		called = true
		return 0, nil
	})
	if err != nil || len(got) != 0 || called {
		t.Fatalf("Map(nil) = %v, %v (called %v), want empty, nil, not called", got, err, called)
	}
}

func TestMapInlineFastPath(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		items int
		opts  []flow.MapOption
	}{
		{"one item", 1, nil},
		{"one worker", 5, []flow.MapOption{flow.Workers(1)}},
		{"one worker on a pool", 5, []flow.MapOption{flow.Workers(1), flow.WithPool(flow.NewPool(4))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			caller := goid()
			var g gauge
			got, err := flow.Map(context.Background(), make([]int, tt.items), func(context.Context, int) (uint64, error) {
				g.enter()
				defer g.leave()
				return goid(), nil
			}, tt.opts...)
			if err != nil {
				t.Fatal(err)
			}
			for i, id := range got {
				if id != caller {
					t.Errorf("item %d ran on goroutine %d, want the caller's %d", i, id, caller)
				}
			}
			if p := g.peak.Load(); p != 1 {
				t.Errorf("%d items ran at once, want 1", p)
			}
		})
	}
}

func TestMapRespectsWorkers(t *testing.T) {
	t.Parallel()
	const workers = 4
	var g gauge
	started := make(chan struct{}, 50)
	release := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := flow.Map(context.Background(), make([]int, 50), func(context.Context, int) (int, error) {
			g.enter()
			defer g.leave()
			started <- struct{}{}
			<-release
			return 0, nil
		}, flow.Workers(workers))
		done <- err
	}()
	for range workers {
		<-started
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if p := g.peak.Load(); p != workers {
		t.Fatalf("peak concurrency %d, want %d", p, workers)
	}
}

// TestMapWaitsForInFlightItemsAndReturnsFirstErrorByInputOrder: item 1
// fails first in time, items 0 and 2 are still running; Map must wait for
// both, return item 0's later error (first by input order), cancel nobody,
// and start no further item.
func TestMapWaitsForInFlightItemsAndReturnsFirstErrorByInputOrder(t *testing.T) {
	t.Parallel()
	errZero, errOne := errors.New("item 0 failed"), errors.New("item 1 failed")
	gate := map[int]chan struct{}{0: make(chan struct{}), 2: make(chan struct{})}
	failed := make(chan struct{})
	running := make(chan struct{}, 2)
	var calls atomic.Int64
	var mu sync.Mutex
	var finished []int
	done := make(chan error, 1)
	go func() {
		_, err := flow.Map(context.Background(), []int{0, 1, 2, 3, 4, 5, 6, 7}, func(ctx context.Context, i int) (int, error) {
			calls.Add(1)
			if i == 1 {
				<-running // fail only once 0 and 2 are in flight
				<-running
				close(failed)
				return 0, errOne
			}
			running <- struct{}{}
			<-gate[i] // items past 2 have no gate and would block forever
			if ctx.Err() != nil {
				t.Errorf("item %d: sibling context cancelled without CancelOnError", i)
			}
			mu.Lock()
			finished = append(finished, i)
			mu.Unlock()
			if i == 0 {
				return 0, errZero
			}
			return i, nil
		}, flow.Workers(3))
		done <- err
	}()
	<-failed
	select {
	case err := <-done:
		t.Fatalf("Map returned %v while items 0 and 2 were in flight", err)
	default:
	}
	close(gate[2])
	close(gate[0])
	err := <-done
	if !errors.Is(err, errZero) {
		t.Fatalf("Map error = %v, want item 0's error (first by input order)", err)
	}
	if len(finished) != 2 {
		t.Errorf("finished items %v, want 0 and 2 both finished before Map returned", finished)
	}
	if c := calls.Load(); c != 3 {
		t.Errorf("%d items were called, want 3 (none started after the failure)", c)
	}
}

func TestMapCancelOnError(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	var cause error
	_, err := flow.Map(context.Background(), []int{0, 1}, func(ctx context.Context, i int) (int, error) {
		if i == 1 {
			return 0, boom
		}
		<-ctx.Done() // only ends because the sibling failed
		cause = context.Cause(ctx)
		return 0, nil
	}, flow.CancelOnError())
	if !errors.Is(err, boom) || !errors.Is(cause, boom) {
		t.Fatalf("Map error %v, sibling's cause %v; want both %v", err, cause, boom)
	}
}

func TestMapTurnsPanicsIntoErrors(t *testing.T) {
	t.Parallel()
	for _, workers := range []int{1, 4} {
		_, err := flow.Map(context.Background(), []int{0, 1, 2}, func(_ context.Context, i int) (int, error) {
			if i == 2 {
				panic("kaboom")
			}
			return i, nil
		}, flow.Workers(workers))
		var pe *flow.PanicError
		if !errors.As(err, &pe) {
			t.Fatalf("workers %d: error %v, want *PanicError", workers, err)
		}
		if pe.Index != 2 || pe.Value != "kaboom" || !strings.Contains(string(pe.Stack), "map_test.go") {
			t.Errorf("workers %d: PanicError{Index %d, Value %v}, stack without the panicking frame:\n%s", workers, pe.Index, pe.Value, pe.Stack)
		}
	}
}

func TestMapStopsWhenContextEnds(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var calls atomic.Int64
	for _, workers := range []int{1, 4} {
		_, err := flow.Map(ctx, make([]int, 10), func(context.Context, int) (int, error) {
			calls.Add(1)
			return 0, nil
		}, flow.Workers(workers))
		if !errors.Is(err, context.Canceled) {
			t.Errorf("workers %d: error %v, want context.Canceled", workers, err)
		}
	}
	if calls.Load() != 0 {
		t.Errorf("%d items ran on an ended context, want 0", calls.Load())
	}
}

// TestNestedMapOnSharedPoolCannotDeadlock nests Maps three deep on a pool of
// two slots: every outer item holds a slot while its inner Map runs. A pool
// that made every item wait for a slot would deadlock here.
func TestNestedMapOnSharedPoolCannotDeadlock(t *testing.T) {
	t.Parallel()
	pool := flow.NewPool(2)
	var leaves atomic.Int64
	var g gauge
	leaf := func(context.Context, int) (int, error) {
		g.enter()
		defer g.leave()
		leaves.Add(1)
		runtime.Gosched()
		return 1, nil
	}
	middle := func(ctx context.Context, _ int) (int, error) {
		// A fresh context on purpose: safety must not depend on passing
		// the item's context down.
		r, err := flow.Map(context.Background(), make([]int, 4), leaf, flow.WithPool(pool))
		return len(r), err
	}
	outer := func(ctx context.Context, _ int) (int, error) {
		r, err := flow.Map(ctx, make([]int, 4), middle, flow.WithPool(pool))
		return len(r), err
	}
	done := make(chan error, 1)
	go func() {
		_, err := flow.Map(context.Background(), make([]int, 6), outer, flow.WithPool(pool))
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second): // a guard against hanging CI, not a timing assertion
		t.Fatal("nested Maps on a shared pool deadlocked")
	}
	if got := leaves.Load(); got != 6*4*4 {
		t.Fatalf("%d leaves ran, want %d", got, 6*4*4)
	}
	if p := g.peak.Load(); p > int64(pool.Size())+1 {
		t.Fatalf("%d leaves ran at once on a pool of %d and one caller", p, pool.Size())
	}
}

func TestMapPoolIsSharedBetweenMaps(t *testing.T) {
	t.Parallel()
	pool := flow.NewPool(3)
	var g gauge
	release := make(chan struct{})
	started := make(chan struct{}, 40)
	var wg sync.WaitGroup
	for range 4 { // four concurrent top-level Maps
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = flow.Map(context.Background(), make([]int, 10), func(context.Context, int) (int, error) {
				g.enter()
				defer g.leave()
				started <- struct{}{}
				<-release
				return 0, nil
			}, flow.WithPool(pool))
		}()
	}
	for range 4 { // each caller runs one item itself
		<-started
	}
	close(release)
	wg.Wait()
	if p := g.peak.Load(); p > int64(pool.Size())+4 {
		t.Fatalf("peak %d items at once; pool of %d plus 4 callers allows %d", p, pool.Size(), pool.Size()+4)
	}
}
