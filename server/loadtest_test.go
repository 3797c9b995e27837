package server

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/ratelimit/memlimit"
	"github.com/sluicehq/sluice/ratelimit/redislimit"
	"github.com/sluicehq/sluice/server/config"
)

// TestLoad measures decisions/s and latency of POST /v1/limits over a real
// loopback HTTP connection. It is a measurement, not a check, so it runs
// only when asked:
//
//	SLUICE_LOADTEST=1 go test -run TestLoad -v ./server/
//	SLUICE_LOADTEST=1 SLUICE_REDIS_URL=redis://127.0.0.1:6379/15 go test -run TestLoad -v ./server/
//
// SLUICE_LOADTEST_DURATION (default 5s) and SLUICE_LOADTEST_CONNS (default
// 64) tune it. The load generator runs in the same process as the server,
// so both share the machine's cores.
func TestLoad(t *testing.T) {
	if os.Getenv("SLUICE_LOADTEST") == "" {
		t.Skip("set SLUICE_LOADTEST=1 to run the load check")
	}
	dur := envDuration(t, "SLUICE_LOADTEST_DURATION", 5*time.Second)
	conns := envInt(t, "SLUICE_LOADTEST_CONNS", 64)
	stores := map[string]func(t *testing.T) ratelimit.Store{"memlimit": func(t *testing.T) ratelimit.Store {
		s := memlimit.New(memlimit.Options{})
		t.Cleanup(func() { s.Close() })
		return s
	}}
	if url := os.Getenv("SLUICE_REDIS_URL"); url != "" {
		stores["redislimit"] = func(t *testing.T) ratelimit.Store {
			opts, err := redis.ParseURL(url)
			if err != nil {
				t.Fatal(err)
			}
			opts.PoolSize = 4 * runtime.GOMAXPROCS(0) * 4
			c := redis.NewClient(opts)
			s, err := redislimit.New(c, redislimit.Options{Prefix: "sluiceload:"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close(); c.FlushDB(context.Background()); c.Close() })
			return s
		}
	}
	for _, name := range []string{"memlimit", "redislimit"} {
		mk, ok := stores[name]
		if !ok {
			continue
		}
		t.Run(name, func(t *testing.T) {
			r := loadRun(t, mk(t), conns, dur)
			t.Logf("%s: %d conns, %s: %.0f decisions/s, p50 %s, p99 %s, %d allowed, %d denied, %d errors",
				name, conns, dur, r.rate, r.p50, r.p99, r.allowed, r.denied, r.errors)
		})
	}
}

type loadResult struct {
	rate                    float64
	p50, p99                time.Duration
	allowed, denied, errors int
}

// loadRun serves one store on loopback and drives it from conns
// goroutines, each with its own keep-alive connection, spreading calls
// over 10,000 members of a 100-per-second policy so that both answers
// occur.
func loadRun(t *testing.T, store ratelimit.Store, conns int, dur time.Duration) loadResult {
	cfg, err := config.Parse([]byte("limits:\n  scenes:\n    member:\n      subject: [member]\n      policies:\n        api: {limits: [{quota: 100, window: 1s}]}\n"), "load.yaml")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{Config: cfg, Limits: store, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: srv.Handler()}
	go hs.Serve(ln)
	defer hs.Close()
	url := "http://" + ln.Addr().String() + "/v1/limits/member/api"
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns}}
	defer client.CloseIdleConnections()

	var (
		mu        sync.Mutex
		latencies []time.Duration
		res       loadResult
		wg        sync.WaitGroup
	)
	deadline := time.Now().Add(dur)
	start := time.Now()
	for g := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var lat []time.Duration
			var a, d, e int
			for i := 0; time.Now().Before(deadline); i++ {
				body := `{"subject":{"member":"` + strconv.Itoa((g*7919+i)%10000) + `"}}`
				t0 := time.Now()
				resp, err := client.Post(url, "application/json", strings.NewReader(body))
				if err != nil {
					e++
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				lat = append(lat, time.Since(t0))
				switch resp.StatusCode {
				case http.StatusOK:
					a++
				case http.StatusTooManyRequests:
					d++
				default:
					e++
				}
			}
			mu.Lock()
			latencies = append(latencies, lat...)
			res.allowed, res.denied, res.errors = res.allowed+a, res.denied+d, res.errors+e
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	slices.Sort(latencies)
	if len(latencies) == 0 {
		t.Fatal("no request completed")
	}
	res.rate = float64(len(latencies)) / elapsed.Seconds()
	res.p50 = latencies[len(latencies)/2]
	res.p99 = latencies[len(latencies)*99/100]
	if res.errors > 0 {
		t.Errorf("%d errors", res.errors)
	}
	return res
}

func envDuration(t *testing.T, key string, def time.Duration) time.Duration {
	v := os.Getenv(key)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("%s: %v", key, err)
	}
	return d
}

func envInt(t *testing.T, key string, def int) int {
	v := os.Getenv(key)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("%s: %v", key, err)
	}
	return n
}
