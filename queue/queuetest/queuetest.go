// Package queuetest is the conformance suite every backend.Backend must pass.
//
// A backend's test calls Run with a Factory that opens a fresh, empty
// backend reading the time from the given clock:
//
//	func TestConformance(t *testing.T) {
//		queuetest.Run(t, func(t *testing.T, clk clock.Clock) backend.Backend {
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
	"github.com/sluicehq/sluice/queue/backend"
)

// Factory opens a fresh, empty backend that reads the time from clk, and
// registers its closing with t.Cleanup. Backends built by one Factory must
// not share jobs (use a new file, a new Redis prefix or database).
type Factory func(t *testing.T, clk clock.Clock) backend.Backend

// Epoch is the time the suite's fake clocks start at.
var Epoch = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// Harness is one test's backend and the fake clock it reads.
type Harness struct {
	Backend backend.Backend
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

// Run runs the whole suite against backends made by f. Each test declares
// the capabilities it relies on; on a backend that lacks one it is skipped
// with a message naming what is missing (see backend.Features).
func Run(t *testing.T, f Factory) {
	runTests(t, f, []test{
		{"Features", nil, RunFeatures},
		{"Enqueue", needs(queue.CapGroups), testEnqueue},
		{"BadInput", nil, testBadInput},
		{"StateMachine", needs(queue.CapClockDelays), testStateMachine},
		{"Fencing", nil, testFencing},
		{"Delays", needs(queue.CapDelay, queue.CapClockDelays), testDelays},
		{"PriorityFIFO", needs(queue.CapPriority, queue.CapStrictOrder), testPriorityFIFO},
		{"Unique", needs(queue.CapUnique), testUnique},
		{"Retries", needs(queue.CapClockDelays), testRetries},
		{"Cancel", needs(queue.CapCancelPending, queue.CapDelay), testCancel},
		{"Stalls", nil, testStalls},
		{"Retention", needs(queue.CapCancelPending), testRetention},
		{"HugeDurations", nil, testHugeDurations},
		{"ZeroStrings", nil, testZeroStrings},
		{"Text", nil, testText},
		{"ListStats", needs(queue.CapList), testListStats},
		{"Worker", nil, testWorker},
		{"Concurrency", nil, testConcurrency},
		{"Tenants", nil, RunTenants},
		{"Groups", nil, RunGroups},
		{"Retry", nil, RunRetry},
		{"Listing", nil, RunListing},
		{"IDs", nil, RunIDs},
		{"GroupRetention", nil, RunGroupRetention},
		{"Flows", nil, RunFlows},
		{"Model", nil, RunModel},
		{"Schedules", nil, RunSchedules},
	})
}
