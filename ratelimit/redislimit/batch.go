package redislimit

import (
	"context"
	"errors"
	"sync"

	"github.com/redis/go-redis/v9"
)

var errBatcherClosed = errors.New("batcher closed")

// call is one Consume waiting for its script run.
type call struct {
	ctx  context.Context
	keys []string
	// now is the script's time argument: "" for the server's clock, or
	// microseconds from an injected clock.
	now any
	// args holds five script arguments per request (see decide.lua).
	args  []any
	reply []int64
	err   error
	// done receives once the reply is set. It is buffered, so a worker never
	// blocks on a caller that gave up.
	done chan struct{}
}

var callPool = sync.Pool{New: func() any { return &call{done: make(chan struct{}, 1)} }}

// batcher gathers concurrent calls into batches, with at most len(slots)
// batches in flight; exec sends a batch as one script run or one pipeline.
//
// A caller that finds a free slot sends its call at once, from its own
// goroutine, taking along every call already waiting: an uncontended call
// costs one round trip and no goroutine hand-off. A caller that finds every
// slot taken hands its call to the unbuffered channel in and waits; a
// worker takes it, waits for a slot, gathers every other waiting call (up
// to max) and sends them as one batch. So while batches are in flight
// the next batch gathers. Because in is unbuffered, a call handed over is
// always completed by whoever took it, and close can never strand one.
type batcher struct {
	client redis.UniversalClient
	max    int
	minTTL string // the script's least key lifetime argument
	// combine lets one script run decide several calls; off on cluster
	// clients, where calls may touch different slots.
	combine bool
	in      chan *call
	slots   chan struct{} // one token per batch in flight
	stop    chan struct{}
	ctx     context.Context // cancelled by close, bounding batches in flight
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

func newBatcher(client redis.UniversalClient, max, pipelines int, minTTL string, combine bool) *batcher {
	ctx, cancel := context.WithCancel(context.Background())
	b := &batcher{
		client: client, max: max, minTTL: minTTL, combine: combine,
		in: make(chan *call), slots: make(chan struct{}, pipelines),
		stop: make(chan struct{}), ctx: ctx, cancel: cancel,
	}
	b.wg.Add(pipelines)
	for range pipelines {
		go b.run()
	}
	return b
}

// do decides one call (keys, time argument now, five args per request) in
// the next batch and returns its reply. A caller waiting for a batch returns
// ctx's error as soon as ctx is done, even when its call is already sent
// (its result is then dropped); a caller whose ctx cannot be cancelled and
// that finds a slot free sends the batch itself.
func (b *batcher) do(ctx context.Context, keys []string, now any, args []any) ([]int64, error) {
	c := callPool.Get().(*call)
	c.ctx, c.keys, c.now, c.args = ctx, keys, now, args
	if ctx.Done() == nil {
		// Nothing can cancel the call, so it may as well block this
		// goroutine: send at once when a slot is free.
		select {
		case b.slots <- struct{}{}:
			b.exec(b.gatherWaiting(append(make([]*call, 0, 8), c)))
			<-b.slots
			<-c.done
			return b.result(c)
		default:
		}
	}
	select {
	case b.in <- c:
	case <-b.stop:
		b.release(c)
		return nil, errBatcherClosed
	case <-ctx.Done():
		b.release(c)
		return nil, ctx.Err()
	}
	select {
	case <-c.done:
		return b.result(c)
	case <-ctx.Done():
		// Whoever took c still owns it and will signal done; c is left to
		// the garbage collector instead of the pool.
		return nil, ctx.Err()
	}
}

func (b *batcher) result(c *call) ([]int64, error) {
	reply, err := c.reply, c.err
	b.release(c)
	return reply, err
}

func (b *batcher) release(c *call) {
	*c = call{done: c.done}
	callPool.Put(c)
}

func (b *batcher) close() {
	close(b.stop)
	b.cancel()
	b.wg.Wait()
}

func (b *batcher) run() {
	defer b.wg.Done()
	batch := make([]*call, 0, b.max)
	for {
		var ok bool
		if batch, ok = b.gather(batch[:0]); !ok {
			return
		}
		b.exec(batch)
		<-b.slots
		clear(batch)
	}
}

// gather waits for one call and a free slot, then takes every call already
// waiting, up to max. It reports false when the batcher is closing, after
// failing the call it holds, if any.
func (b *batcher) gather(batch []*call) ([]*call, bool) {
	select {
	case c := <-b.in:
		batch = append(batch, c)
	case <-b.stop:
		return batch, false
	}
	select {
	case b.slots <- struct{}{}:
	case <-b.stop:
		b.finish(batch[0], nil, errBatcherClosed)
		return batch[:0], false
	}
	return b.gatherWaiting(batch), true
}

// gatherWaiting adds the calls already waiting to batch, up to max.
func (b *batcher) gatherWaiting(batch []*call) []*call {
	for len(batch) < b.max {
		select {
		case c := <-b.in:
			batch = append(batch, c)
		default:
			return batch
		}
	}
	return batch
}
