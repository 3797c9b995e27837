package redisqueue

import (
	"context"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// call is one script run waiting for its turn.
type call struct {
	script *redis.Script
	keys   []string
	args   []any
	res    any
	err    error
	done   chan struct{}
}

// batcher sends concurrent script runs together. A few sender goroutines
// take calls from one unbuffered channel: an idle sender takes a call at
// once and runs it alone, so a lone call pays no wait; while senders are
// busy, callers queue up on the channel, and the next free sender takes
// all of them (up to max) and sends them as one pipeline: one round trip
// and two system calls for the lot, instead of one each. Each script in
// the pipeline is still its own atomic step.
type batcher struct {
	c    redis.UniversalClient
	in   chan *call
	quit chan struct{}
	wg   sync.WaitGroup
	max  int
}

func newBatcher(c redis.UniversalClient, max, senders int) *batcher {
	b := &batcher{c: c, in: make(chan *call), quit: make(chan struct{}), max: max}
	b.wg.Add(senders)
	for i := 0; i < senders; i++ {
		go b.loop()
	}
	return b
}

// run hands the call to a sender and waits for its result or ctx.
func (b *batcher) run(ctx context.Context, c *call) (any, error) {
	c.done = make(chan struct{})
	select {
	case b.in <- c:
	case <-b.quit:
		return nil, errClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case <-c.done:
		return c.res, c.err
	case <-ctx.Done():
		// The call is on its way and will run; only the wait ends.
		return nil, ctx.Err()
	}
}

func (b *batcher) loop() {
	defer b.wg.Done()
	batch := make([]*call, 0, b.max)
	for {
		select {
		case <-b.quit:
			return
		case c := <-b.in:
			batch = append(batch[:0], c)
		}
	gather:
		for len(batch) < b.max {
			select {
			case c := <-b.in:
				batch = append(batch, c)
			default:
				break gather
			}
		}
		b.send(batch)
		clear(batch)
	}
}

// send runs the batch: one call directly, several as one pipeline.
// Scripts the server does not know yet (NOSCRIPT) are run again one by one
// through Script.Run, which loads them.
func (b *batcher) send(batch []*call) {
	ctx := context.Background()
	if len(batch) == 1 {
		c := batch[0]
		c.res, c.err = c.script.Run(ctx, b.c, c.keys, c.args...).Result()
		close(c.done)
		return
	}
	pipe := b.c.Pipeline()
	cmds := make([]*redis.Cmd, len(batch))
	for i, c := range batch {
		cmds[i] = c.script.EvalSha(ctx, pipe, c.keys, c.args...)
	}
	_, _ = pipe.Exec(ctx) // errors are read per command below
	for i, c := range batch {
		c.res, c.err = cmds[i].Result()
		if c.err != nil && strings.HasPrefix(c.err.Error(), "NOSCRIPT") {
			c.res, c.err = c.script.Run(ctx, b.c, c.keys, c.args...).Result()
		}
		close(c.done)
	}
}

// close stops the senders after the batches they are sending.
func (b *batcher) close() {
	close(b.quit)
	b.wg.Wait()
}
