package queue_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/sluicehq/sluice/clock"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
)

// A nightly report: at 02:30 Berlin time, every night, one job of kind
// "report" on queue "reports". Any number of processes may run a
// Scheduler against the same store; each tick makes exactly one job. The
// example drives time with a fake clock to show three nights in a moment.
func ExampleScheduler() {
	dir, err := os.MkdirTemp("", "schedule-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	clk := clock.NewFake(time.Date(2030, 3, 29, 12, 0, 0, 0, time.UTC))
	b, err := sqlitequeue.Open(filepath.Join(dir, "queue.db"), sqlitequeue.Options{Clock: clk})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	c := queue.NewClient(b)
	ctx := context.Background()

	info, err := c.SetSchedule(ctx, queue.Schedule{
		Name:     "nightly-report",
		Cron:     "30 2 * * *",
		TimeZone: "Europe/Berlin",
		Job:      queue.JobSpec{Queue: "reports", Kind: "report", Payload: []byte(`{"period":"day"}`)},
		Overlap:  queue.OverlapSkip, // a report still running holds the next one back
	})
	if err != nil {
		log.Fatal(err)
	}
	// The night of 30-31 March skips 02:00-03:00 in Berlin: that night's
	// report runs once, at 03:30 local time.
	berlin, _ := time.LoadLocation("Europe/Berlin")
	for _, t := range info.Next[:3] {
		fmt.Println("next:", t.In(berlin).Format("2006-01-02 15:04 MST"), "=", t.UTC().Format("15:04 MST"))
	}

	// In a service: go queue.NewScheduler(c, queue.SchedulerConfig{}).Run(ctx)
	s := queue.NewScheduler(c, queue.SchedulerConfig{Clock: clk})
	for night := 0; night < 3; night++ {
		clk.Advance(24 * time.Hour)
		if _, err := s.RunDue(ctx); err != nil {
			log.Fatal(err)
		}
		// A worker would run the report; here it is leased and completed.
		ls, err := b.Lease(ctx, backend.LeaseRequest{Queues: []string{"reports"}, WorkerID: "w", Max: 1, LeaseFor: time.Minute})
		if err != nil || len(ls) != 1 {
			log.Fatal(err)
		}
		if err := b.Complete(ctx, ls[0].Job.ID, ls[0].Token, []byte("report.pdf")); err != nil {
			log.Fatal(err)
		}
		info, _ = c.Schedule(ctx, "nightly-report")
		fmt.Println("ran for", info.LastRun.Tick.Format(time.RFC3339), "->", info.LastRun.State)
	}
	// Output:
	// next: 2030-03-30 02:30 CET = 01:30 UTC
	// next: 2030-03-31 03:30 CEST = 01:30 UTC
	// next: 2030-04-01 02:30 CEST = 00:30 UTC
	// ran for 2030-03-30T01:30:00Z -> completed
	// ran for 2030-03-31T01:30:00Z -> completed
	// ran for 2030-04-01T00:30:00Z -> completed
}
