package flow_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/ratelimit/memlimit"
)

func ExampleNewBudget() {
	// One budget per upstream, created once and shared by every caller in
	// the process: 3 calls per minute, starting full.
	budget, err := flow.NewBudget(3, time.Minute)
	if err != nil {
		panic(err)
	}
	fmt.Println(budget.TryTake(1), budget.TryTake(1), budget.TryTake(1), budget.TryTake(1))

	// The next call is 20 seconds away: a caller with 5 seconds left is
	// told at once instead of waiting in vain.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = budget.Wait(ctx, 1)
	fmt.Println(errors.Is(err, flow.ErrWouldExceedDeadline))
	// Output:
	// true true true false
	// true
}

func ExampleNewSharedBudget() {
	// In production every process opens its own redislimit.Store on the
	// same Redis; two budgets on one in-process store show the sharing.
	store := memlimit.New(memlimit.Options{})
	defer store.Close()
	a, _ := flow.NewSharedBudget(store, "geocoder", 2, time.Minute)
	b, _ := flow.NewSharedBudget(store, "geocoder", 2, time.Minute)
	fmt.Println(a.TryTake(1), b.TryTake(1), a.TryTake(1), b.TryTake(1))
	// Output: true true false false
}

func ExampleMap() {
	square := func(_ context.Context, n int) (int, error) { return n * n, nil }
	got, err := flow.Map(context.Background(), []int{1, 2, 3, 4, 5}, square, flow.Workers(3))
	fmt.Println(got, err)
	// Output: [1 4 9 16 25] <nil>
}

func ExampleMap_nested() {
	// Maps nested on one Pool cannot deadlock: a Map's caller works on its
	// items too, so an inner Map progresses even when every slot is held
	// by the outer one.
	pool := flow.NewPool(2)
	rows := [][]int{{1, 2}, {3, 4}, {5, 6}}
	sums, err := flow.Map(context.Background(), rows, func(ctx context.Context, row []int) (int, error) {
		doubled, err := flow.Map(ctx, row, func(_ context.Context, n int) (int, error) { return 2 * n, nil }, flow.WithPool(pool))
		return doubled[0] + doubled[1], err
	}, flow.WithPool(pool))
	fmt.Println(sums, err)
	// Output: [6 14 22] <nil>
}

func ExampleSweep() {
	dates := []string{"2026-03-01", "2026-03-02", "2026-03-03", "2026-03-04", "2026-03-05"}
	quiet := flow.SweepLogger(slog.New(slog.DiscardHandler))

	// One date times out: the sweep succeeds with a one-line warning.
	res, err := flow.Sweep(context.Background(), dates, func(_ context.Context, date string) (int, error) {
		if date == "2026-03-04" {
			return 0, context.DeadlineExceeded
		}
		return 120, nil
	}, flow.ItemName("date"), quiet)
	fmt.Println(res.Values(), err)
	fmt.Println(res.Warning)

	// Every page is a consent page: the breaker trips after 5 and the
	// rest of a long sweep is skipped without a call.
	long := make([]string, 60)
	res, err = flow.Sweep(context.Background(), long, func(context.Context, string) (int, error) {
		return 0, flow.Blocked(errors.New("consent page instead of prices"))
	}, flow.ItemName("date"), quiet)
	fmt.Println(res.Tripped, res.Skipped >= 60-5-flow.DefaultWorkers, errors.Is(err, flow.ErrBlocked))
	// Output:
	// [120 120 120 120] <nil>
	// flow: partial sweep: 4 of 5 dates loaded, 1 failed, 0 skipped; top reasons: context deadline exceeded (1)
	// true true true
}

func ExampleRetry() {
	attempts := 0
	err := flow.Retry(context.Background(), flow.Policy{Attempts: 5, Backoff: time.Millisecond}, func(context.Context) error {
		attempts++
		if attempts < 3 {
			return errors.New("connection reset")
		}
		return nil
	})
	fmt.Println(err, attempts)

	// Permanent stops at once; the error comes back unwrapped.
	attempts = 0
	notFound := errors.New("no such user")
	err = flow.Retry(context.Background(), flow.Policy{}, func(context.Context) error {
		attempts++
		return flow.Permanent(notFound)
	})
	fmt.Println(err == notFound, attempts)
	// Output:
	// <nil> 3
	// true 1
}

func ExampleRetryValue() {
	budget, _ := flow.NewBudget(10, time.Second)
	// Every attempt, the first included, takes a call from the budget.
	v, err := flow.RetryValue(context.Background(), flow.Policy{Budget: budget}, func(context.Context) (string, error) {
		return "pong", nil
	})
	fmt.Println(v, err)
	// Output: pong <nil>
}

func ExampleTransport() {
	var calls atomic.Int64
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "slow down", http.StatusTooManyRequests)
			return
		}
		fmt.Fprint(w, "hello")
	}))
	defer upstream.Close()

	budget, _ := flow.NewBudget(10, time.Second)
	client := &http.Client{Transport: flow.Transport(http.DefaultTransport,
		flow.WithBudget(budget),
		flow.WithRetry(flow.Policy{Attempts: 3}))}
	resp, err := client.Get(upstream.URL)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.Status, string(body), "after", calls.Load(), "calls")
	// Output: 200 OK hello after 2 calls
}
