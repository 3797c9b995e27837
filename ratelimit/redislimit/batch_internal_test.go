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

// TestExec sends batches to a server that lost the script, combined into
// one script run or as a pipeline of runs, with calls on two different
// times: each call gets its own reply through the EVAL retry, a call whose
// context is done is not sent, and a malformed counter fails only its own
// call.
func TestExec(t *testing.T) {
	t.Parallel()
	for _, combine := range []bool{true, false} {
		m := miniredis.RunT(t)
		c := redis.NewClient(&redis.Options{Addr: m.Addr()})
		defer c.Close()
		b := newBatcher(c, 8, 1, "0", combine)
		defer b.close()
		if err := m.Set("bad", "garbage"); err != nil {
			t.Fatal(err)
		}
		canceled, cancel := context.WithCancel(context.Background())
		cancel()
		var batch []*call
		for i, key := range []string{"a", "b", "c", "bad", "d", "e"} {
			ctx := context.Background()
			if key == "c" {
				ctx = canceled
			}
			now := any("")
			if i >= 4 {
				now = int64(1_700_000_000_000_000)
			}
			// fixed window, quota 10, window 1 s, capacity 10, cost i+1
			args := []any{0, 10, 1_000_000, 10, i + 1}
			batch = append(batch, &call{ctx: ctx, keys: []string{key}, now: now, args: args, done: make(chan struct{}, 1)})
		}
		if err := c.ScriptFlush(t.Context()).Err(); err != nil {
			t.Fatal(err)
		}
		b.exec(batch)
		if ok, err := decideScript.Exists(t.Context(), c).Result(); err != nil || !ok[0] {
			t.Errorf("combine %v: script not loaded again after NOSCRIPT: %v, %v", combine, ok, err)
		}
		for i, cl := range batch {
			<-cl.done
			switch cl.keys[0] {
			case "c":
				if !errors.Is(cl.err, context.Canceled) || m.Exists("c") {
					t.Errorf("combine %v: canceled call: err %v, key written %v; want context.Canceled and no key", combine, cl.err, m.Exists("c"))
				}
			case "bad":
				if cl.err != nil || len(cl.reply) != replyWidth || cl.reply[0] != flagForeignValue {
					t.Errorf("combine %v: call on a malformed counter: reply %v, err %v; want flag %d", combine, cl.reply, cl.err, flagForeignValue)
				}
			default:
				if cl.err != nil || len(cl.reply) != replyWidth || cl.reply[0] != 1 || cl.reply[1] != int64(i+1) {
					t.Errorf("combine %v: call %d: reply %v, err %v; want allowed with used %d", combine, i, cl.reply, cl.err, i+1)
				}
			}
		}
	}
}
