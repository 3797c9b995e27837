package budget_test

import (
	"container/heap"
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/budget"
)

// worker is one simulated worker: it claims, and when held sleeps until
// the hold's Until (no polling); when admitted it works for a while,
// settles and claims again.
type worker struct {
	b      *budget.Budgets
	tenant string
	at     time.Time // when it next claims
	starts int
}

type wakeups []*worker

func (w wakeups) Len() int           { return len(w) }
func (w wakeups) Less(i, j int) bool { return w[i].at.Before(w[j].at) }
func (w wakeups) Swap(i, j int)      { w[i], w[j] = w[j], w[i] }
func (w *wakeups) Push(x any)        { *w = append(*w, x.(*worker)) }
func (w *wakeups) Pop() any {
	old := *w
	x := old[len(old)-1]
	*w = old[:len(old)-1]
	return x
}

// simulate runs workers on the fake clock for d and returns the starts
// per whole second.
func simulate(t *testing.T, e env, ws []*worker, d, work time.Duration) []int {
	t.Helper()
	start := e.clk.Now()
	perSecond := make([]int, int(d/time.Second))
	q := wakeups{}
	for _, w := range ws {
		w.at = start
		heap.Push(&q, w)
	}
	for q.Len() > 0 {
		w := heap.Pop(&q).(*worker)
		if !w.at.Before(start.Add(d)) {
			continue
		}
		if w.at.After(e.clk.Now()) {
			e.clk.Set(w.at)
		}
		a := admit(t, w.b, claim(w.tenant, map[string]budget.Cost{"api": {}}))
		if a.Admitted {
			perSecond[int(e.clk.Now().Sub(start)/time.Second)]++
			w.starts++
			settle(t, w.b, a.Ticket, nil) // the work's end, settled at once: the budget is per start
			w.at = e.clk.Now().Add(work)
		} else {
			if a.Hold.RetryAfter <= 0 {
				t.Fatalf("held with RetryAfter %v: a waiter would poll", a.Hold.RetryAfter)
			}
			w.at = a.Hold.Until
		}
		heap.Push(&q, w)
	}
	return perSecond
}

// TestFleetSharesBudget: a budget of 10 starts a second shared by 12
// workers in 3 processes: no second starts more than 10, and the fleet
// uses at least 90% of the budget, waking only when the budget says room
// returns.
func TestFleetSharesBudget(t *testing.T) {
	forEachStore(t, func(t *testing.T, e env) {
		cfg := budget.Config{Limits: budget.Limits{Requests: budget.Rate{Quota: 10, Window: time.Second, Burst: 1}}}
		var ws []*worker
		for p := range 3 {
			b := e.budgetsOn(t, e.open(), map[string]budget.Config{"api": cfg})
			for i := range 4 {
				ws = append(ws, &worker{b: b, tenant: fmt.Sprintf("t%d", (p*4+i)%5)})
			}
		}
		per := simulate(t, e, ws, 20*time.Second, 0)
		total := 0
		for s, n := range per {
			total += n
			if n > 10 {
				t.Errorf("second %d started %d, want at most 10", s, n)
			}
		}
		t.Logf("fleet: %d, per second %v", total, per)
		if total < 180 {
			t.Errorf("the fleet started %d in 20s, want at least 180 (90%% of 200)", total)
		}
	})
}

// TestFloorUnderContention: tenant a has ten workers, b one; with a floor
// of 20% b still starts at least its floor (2 a second) while a takes the
// rest.
func TestFloorUnderContention(t *testing.T) {
	forEachStore(t, func(t *testing.T, e env) {
		cfg := budget.Config{
			Limits: budget.Limits{Requests: budget.PerSecond(10)},
			Share:  budget.Share{Floor: 0.2},
		}
		b := e.budgets(t, map[string]budget.Config{"api": cfg})
		var ws []*worker
		for range 10 {
			ws = append(ws, &worker{b: b, tenant: "a"})
		}
		bw := &worker{b: b, tenant: "b"}
		ws = append(ws, bw)
		per := simulate(t, e, ws, 20*time.Second, 0)
		total := 0
		for _, n := range per {
			total += n
		}
		t.Logf("tenant b %d of %d", bw.starts, total)
		if bw.starts < 2*20 {
			t.Errorf("tenant b started %d in 20s under contention, want at least its floor of 40", bw.starts)
		}
		if total < 200 || total > 210 {
			t.Errorf("the budget started %d in 20s, want 200 (plus the first burst of 10)", total)
		}
	})
}
