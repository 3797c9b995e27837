package queue_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

func ExampleClient_SetTenant() {
	b, done := openExample()
	defer done()
	c := queue.NewClient(b)
	ctx := context.Background()

	// acme may run two jobs at once; the rest wait, visibly.
	if err := c.SetTenant(ctx, "acme", queue.TenantConfig{Limit: 2}); err != nil {
		log.Fatal(err)
	}
	var states []queue.State
	for i := 0; i < 5; i++ {
		j, err := c.Enqueue(ctx, queue.JobSpec{Queue: "crawl", Kind: "page", Tenant: "acme", Priority: 5 - i})
		if err != nil {
			log.Fatal(err)
		}
		states = append(states, j.State)
	}
	info, _ := c.Tenant(ctx, "acme")
	fmt.Println(states)
	fmt.Println("pending", info.Pending, "waiting", info.Waiting, "backlog cap", info.Effective.Backlog)

	// Raising the limit releases waiting jobs at once, best first.
	_ = c.SetTenantLimit(ctx, "acme", 3)
	info, _ = c.Tenant(ctx, "acme")
	fmt.Println("pending", info.Pending, "waiting", info.Waiting)
	// Output:
	// [pending pending waiting waiting waiting]
	// pending 2 waiting 3 backlog cap 50000
	// pending 3 waiting 2
}

func ExampleClient_CreateGroup() {
	b, done := openExample()
	defer done()
	c := queue.NewClient(b)
	ctx := context.Background()

	// A crawl: at most 2 pages at once, and a report once every page is done.
	_, err := c.CreateGroup(ctx, queue.GroupSpec{
		ID: "crawl-1", MaxConcurrency: 2, CompletionKind: "crawl-report", CompletionQueue: "reports",
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, url := range []string{"/a", "/b", "/c"} {
		if _, err := c.Enqueue(ctx, queue.JobSpec{Queue: "crawl", Kind: "page", Group: "crawl-1", Payload: []byte(url)}); err != nil {
			log.Fatal(err)
		}
	}
	w := queue.NewWorker(b, queue.WorkerConfig{Queues: []string{"crawl", "reports"}, PollInterval: 10 * time.Millisecond})
	w.Handle("page", queue.HandlerFunc(func(context.Context, *queue.Job) ([]byte, error) { return nil, nil }))
	reports := make(chan string, 1)
	w.Handle("crawl-report", queue.HandlerFunc(func(_ context.Context, j *queue.Job) ([]byte, error) {
		reports <- string(j.Payload) // without a CompletionPayload: the group's final counts
		return nil, nil
	}))
	runCtx, stop := context.WithCancel(ctx)
	stopped := make(chan error)
	go func() { stopped <- w.Run(runCtx) }()
	fmt.Println(<-reports)
	stop()
	<-stopped

	p, _ := c.Group(ctx, "crawl-1")
	fmt.Println(p.Done, p.Completed, p.CompletionJobID != "")
	// Output:
	// {"group":"crawl-1","total":3,"completed":3,"failed":0,"cancelled":0}
	// true 3 true
}

func ExampleClient_BackOff() {
	b, done := openExample()
	defer done()
	c := queue.NewClient(b)
	ctx := context.Background()

	if _, err := c.Enqueue(ctx, queue.JobSpec{Queue: "api", Kind: "call", Tenant: "acme"}); err != nil {
		log.Fatal(err)
	}
	// The upstream answered 429 for acme: start none of its jobs for a minute.
	until, _ := c.BackOff(ctx, queue.TenantScope("acme"), time.Minute)
	info, _ := c.Tenant(ctx, "acme")
	fmt.Println(info.Pending, info.Waiting, until.Equal(info.PausedUntil))

	// A back-off of zero resumes at once.
	_, _ = c.BackOff(ctx, queue.TenantScope("acme"), 0)
	info, _ = c.Tenant(ctx, "acme")
	fmt.Println(info.Pending, info.Waiting)
	// Output:
	// 0 1 true
	// 1 0
}

func ExampleLoadPriority() {
	prio := queue.LoadPriority(queue.DefaultBasePriority, func(tenant string) queue.Tier {
		if tenant == "big" {
			return queue.TierEnterprise
		}
		return queue.TierFree
	})
	// Jobs sent in the last minute → priority (lower runs first).
	for _, n := range []int64{10, 60, 500} {
		fmt.Println(n, prio(queue.JobSpec{Tenant: "small"}, n), prio(queue.JobSpec{Tenant: "big"}, n))
	}
	// Output:
	// 10 10 10
	// 60 28 10
	// 500 248 10
}

func ExampleClient_Tenants() {
	b, done := openExample()
	defer done()
	c := queue.NewClient(b)
	ctx := context.Background()

	// alpha's first job starts; gamma has more jobs waiting than beta.
	for _, tenant := range []string{"alpha", "alpha", "beta", "gamma", "gamma", "gamma"} {
		if _, err := c.Enqueue(ctx, queue.JobSpec{Queue: "crawl", Kind: "page", Tenant: tenant}); err != nil {
			log.Fatal(err)
		}
	}
	if _, err := b.Lease(ctx, backend.LeaseRequest{Queues: []string{"crawl"}, WorkerID: "w", Max: 1, LeaseFor: time.Minute}); err != nil {
		log.Fatal(err)
	}
	page, err := c.Tenants(ctx, queue.TenantFilter{Order: queue.TenantsBusiest})
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range page.Tenants {
		fmt.Println(t.Tenant, "active", t.Active, "pending", t.Pending)
	}
	// Output:
	// alpha active 1 pending 1
	// gamma active 0 pending 3
	// beta active 0 pending 1
}
