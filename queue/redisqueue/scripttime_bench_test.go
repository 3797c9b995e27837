package redisqueue_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/redisqueue"
)

// BenchmarkScriptTime runs one job at a time through enqueue, lease and
// complete, and reports each step's script time on the server (FCALL or
// EVALSHA usec in INFO commandstats) and the commands the step's scripts
// ran, per job: what a job costs Redis when nothing else runs. Give it a
// Redis of its own (SLUICE_REDIS_URL); with full set, the lean path is off.
//
//	SLUICE_REDIS_URL=redis://127.0.0.1:6390/12 go test ./queue/redisqueue \
//	  -run '^$' -bench ScriptTime -benchtime 3000x
func BenchmarkScriptTime(b *testing.B) {
	for _, full := range []bool{false, true} {
		b.Run("full="+strconv.FormatBool(full), func(b *testing.B) {
			s := benchServer(b)
			if s.mini != nil {
				b.Skip("needs real Redis: set SLUICE_REDIS_URL")
			}
			c := s.client(b)
			be := s.backendOn(b, c, redisqueue.Options{})
			if full {
				redisqueue.DisableLean(be)
			}
			cl := queue.NewClient(be)
			ctx := context.Background()
			var us, cmds [3]float64
			step := func(i int, f func() error) {
				s0 := scriptStats(b, c)
				if err := f(); err != nil {
					b.Fatal(err)
				}
				s1 := scriptStats(b, c)
				us[i] += s1.scriptUS - s0.scriptUS
				cmds[i] += s1.calls - s0.calls - 1 // less the INFO
			}
			req := backend.LeaseRequest{Queues: []string{"bench"}, WorkerID: "w", Max: 10, LeaseFor: time.Minute}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				var ls []queue.Lease
				step(0, func() error {
					_, err := cl.Enqueue(ctx, queue.JobSpec{Queue: "bench", Kind: "k", Payload: []byte("x")})
					return err
				})
				step(1, func() (err error) { ls, err = be.Lease(ctx, req); return err })
				step(2, func() error {
					for _, l := range ls {
						if err := be.Complete(ctx, l.Job.ID, l.Token, nil); err != nil {
							return err
						}
					}
					return nil
				})
			}
			n := float64(b.N)
			for i, name := range []string{"enqueue", "lease", "complete"} {
				b.ReportMetric(us[i]/n, name+"-µs")
				b.ReportMetric(cmds[i]/n, name+"-cmds")
			}
		})
	}
}

type scriptStat struct{ scriptUS, calls float64 }

// scriptStats is the script time and the count of every command so far.
func scriptStats(b *testing.B, c *redis.Client) scriptStat {
	var s scriptStat
	for name, st := range commandStats(b, c) {
		s.calls += st.calls
		if name == "fcall" || name == "evalsha" {
			s.scriptUS += st.usec
		}
	}
	return s
}
