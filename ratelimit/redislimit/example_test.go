package redislimit_test

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/ratelimit/redislimit"
)

// A scene limited on Redis: every process that shares the Redis shares the
// counters. (miniredis stands in for a real server here.)
func Example() {
	mr, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	client := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer client.Close()

	store, err := redislimit.New(client, redislimit.Options{})
	if err != nil {
		panic(err)
	}
	defer store.Close()

	login, err := ratelimit.Define(store, ratelimit.Definition[string]{
		Scene:   "ip",
		Policy:  func(string) string { return "login" },
		Subject: func(ip string) []string { return []string{"ip", ip} },
		Limits: func(string) []ratelimit.Limit {
			return []ratelimit.Limit{ratelimit.PerMinute(2).With(ratelimit.TokenBucket)}
		},
	}, ratelimit.WithTimeout(time.Minute)) // in production the default 100ms; generous here, where the example is a test on a busy machine
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for range 3 {
		d, err := login.Consume(ctx, "192.0.2.1")
		if err != nil {
			panic(err)
		}
		fmt.Println(d.Allowed, d.Results[0].Remaining)
	}
	fmt.Println(mr.Keys())
	// Output:
	// true 1
	// true 0
	// false 0
	// [sluice:rate-limit:ip:login:{ip:192.0.2.1}:t60000]
}

// Ping loads the decision script and checks Redis answers: a readiness
// probe.
func ExampleStore_Ping() {
	mr, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	client := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer client.Close()
	store, err := redislimit.New(client, redislimit.Options{})
	if err != nil {
		panic(err)
	}
	defer store.Close()
	fmt.Println(store.Ping(context.Background()))
	// Output: <nil>
}
