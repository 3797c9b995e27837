package redislimit

import (
	"context"
	"errors"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

func TestGatherTakesWaitingCallsUpToMax(t *testing.T) {
	t.Parallel()
	b := &batcher{max: 3, in: make(chan *call, 8), slots: make(chan struct{}, 1), stop: make(chan struct{})}
	for range 5 {
		b.in <- &call{}
	}
	for i, want := range []int{3, 2} {
		got, ok := b.gather(nil)
		if !ok || len(got) != want || len(b.slots) != 1 {
			t.Errorf("gather %d: %d calls (ok %v, %d slots taken), want %d and 1 slot", i, len(got), ok, len(b.slots), want)
		}
		<-b.slots
	}
	close(b.stop)
	if _, ok := b.gather(nil); ok {
		t.Error("gather after stop: ok, want false")
	}
}

// TestExecPipeline sends one pipeline of several calls to a server that
// lost the script: each call gets its own reply through the EVAL retry, and
// a call whose context is done is not sent.
func TestExecPipeline(t *testing.T) {
	t.Parallel()
	m := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer c.Close()
	b := newBatcher(c, 8, 1)
	defer b.close()
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	var batch []*call
	for i, key := range []string{"a", "b", "c", "d"} {
		ctx := context.Background()
		if key == "c" {
			ctx = canceled
		}
		// fixed window, quota 10, window 1 s, capacity 10, cost i+1
		args := []any{"", "0", 0, 10, 1_000_000, 10, i + 1}
		batch = append(batch, &call{ctx: ctx, keys: []string{key}, args: args, done: make(chan struct{}, 1)})
	}
	if err := c.ScriptFlush(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	b.exec(batch)
	if ok, err := decideScript.Exists(t.Context(), c).Result(); err != nil || !ok[0] {
		t.Errorf("script not loaded again after NOSCRIPT: %v, %v", ok, err)
	}
	for i, cl := range batch {
		<-cl.done
		if cl.ctx == canceled {
			if !errors.Is(cl.err, context.Canceled) || m.Exists(cl.keys[0]) {
				t.Errorf("canceled call: err %v, key written %v; want context.Canceled and no key", cl.err, m.Exists(cl.keys[0]))
			}
			continue
		}
		if cl.err != nil || len(cl.reply) != replyWidth || cl.reply[0] != 1 || cl.reply[1] != int64(i+1) {
			t.Errorf("call %d: reply %v, err %v; want allowed with used %d", i, cl.reply, cl.err, i+1)
		}
	}
}
