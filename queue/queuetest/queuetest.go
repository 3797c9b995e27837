// Package queuetest is the conformance suite every queue.Backend must pass.
//
// A backend's test calls Run with a Factory that opens a fresh, empty
// backend reading the time from the given clock:
//
//	func TestConformance(t *testing.T) {
//		queuetest.Run(t, func(t *testing.T, clk clock.Clock) queue.Backend {
//			b, err := sqlitequeue.Open(filepath.Join(t.TempDir(), "q.db"), sqlitequeue.Options{Clock: clk})
//			if err != nil {
//				t.Fatal(err)
//			}
//			t.Cleanup(func() { b.Close() })
//			return b
//		})
//	}
//
// Most tests drive the backend with a fake clock and never sleep; the
// worker and concurrency tests use the real clock and wait on conditions,
// never on timings. The crash test (Crash, CrashWorkerMain) runs workers as
// separate processes and kills one with SIGKILL.
package queuetest

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/queue"
)

// Factory opens a fresh, empty backend that reads the time from clk, and
// registers its closing with t.Cleanup. Backends built by one Factory must
// not share jobs (use a new file, a new Redis prefix or database).
type Factory func(t *testing.T, clk clock.Clock) queue.Backend

// Epoch is the time the suite's fake clocks start at.
var Epoch = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// Harness is one test's backend and the fake clock it reads.
type Harness struct {
	Backend queue.Backend
	Clock   *clock.Fake
	Client  *queue.Client
}

// NewHarness opens a backend on a fake clock starting at Epoch.
func NewHarness(t *testing.T, f Factory) *Harness {
	t.Helper()
	clk := clock.NewFake(Epoch)
	b := f(t, clk)
	return &Harness{Backend: b, Clock: clk, Client: queue.NewClient(b)}
}

// Run runs the whole suite against backends made by f.
func Run(t *testing.T, f Factory) {
	t.Run("Features", func(t *testing.T) { RunFeatures(t, f) })
	t.Run("Enqueue", func(t *testing.T) { testEnqueue(t, f) })
	t.Run("BadInput", func(t *testing.T) { testBadInput(t, f) })
	t.Run("StateMachine", func(t *testing.T) { testStateMachine(t, f) })
	t.Run("Fencing", func(t *testing.T) { testFencing(t, f) })
	t.Run("Delays", func(t *testing.T) { testDelays(t, f) })
	t.Run("PriorityFIFO", func(t *testing.T) { testPriorityFIFO(t, f) })
	t.Run("Unique", func(t *testing.T) { testUnique(t, f) })
	t.Run("Retries", func(t *testing.T) { testRetries(t, f) })
	t.Run("Cancel", func(t *testing.T) { testCancel(t, f) })
	t.Run("Stalls", func(t *testing.T) { testStalls(t, f) })
	t.Run("Retention", func(t *testing.T) { testRetention(t, f) })
	t.Run("ListStats", func(t *testing.T) { testListStats(t, f) })
	t.Run("Worker", func(t *testing.T) { testWorker(t, f) })
	t.Run("Concurrency", func(t *testing.T) { testConcurrency(t, f) })
	t.Run("Tenants", func(t *testing.T) { RunTenants(t, f) })
	t.Run("Groups", func(t *testing.T) { RunGroups(t, f) })
	t.Run("Retry", func(t *testing.T) { RunRetry(t, f) })
	t.Run("Listing", func(t *testing.T) { RunListing(t, f) })
	t.Run("IDs", func(t *testing.T) { RunIDs(t, f) })
	t.Run("GroupRetention", func(t *testing.T) { RunGroupRetention(t, f) })

}
