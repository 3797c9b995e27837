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
	ctx   context.Context
	keys  []string
	args  []any
	reply []int64
	err   error
	// done receives once the reply is set. It is buffered, so a worker never
	// blocks on a caller that gave up.
	done chan struct{}
}

var callPool = sync.Pool{New: func() any { return &call{done: make(chan struct{}, 1)} }}

// batcher gathers concurrent calls into pipelines, with at most len(slots)
// pipelines in flight.
//
// A caller that finds a free slot sends its call at once, from its own
// goroutine, taking along every call already waiting: an uncontended call
// costs one round trip and no goroutine hand-off. A caller that finds every
// slot taken hands its call to the unbuffered channel in and waits; a
// worker takes it, waits for a slot, gathers every other waiting call (up
// to max) and sends them as one pipeline. So while pipelines are in flight
// the next batch gathers. Because in is unbuffered, a call handed over is
// always completed by whoever took it, and close can never strand one.
type batcher struct {
	client redis.UniversalClient
	max    int
	in     chan *call
	slots  chan struct{} // one token per pipeline in flight
	stop   chan struct{}
	ctx    context.Context // cancelled by close, bounding pipelines in flight
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newBatcher(client redis.UniversalClient, max, pipelines int) *batcher {
	ctx, cancel := context.WithCancel(context.Background())
	b := &batcher{
		client: client, max: max, in: make(chan *call), slots: make(chan struct{}, pipelines),
		stop: make(chan struct{}), ctx: ctx, cancel: cancel,
	}
	b.wg.Add(pipelines)
	for range pipelines {
		go b.run()
	}
	return b
}

// do runs the script for keys and args, at once when a pipeline slot is
// free, else in the next batch, and returns its reply. A caller waiting for
// a batch returns ctx's error as soon as ctx is done, even when its call is
// already in a pipeline (whose result is then dropped); a caller that sends
// its own pipeline waits for it like a direct go-redis call.
func (b *batcher) do(ctx context.Context, keys []string, args []any) ([]int64, error) {
	c := callPool.Get().(*call)
	c.ctx, c.keys, c.args = ctx, keys, args
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

// exec runs batch and completes every call in it. Calls whose context is
// already done are answered with its error and not sent, so an abandoned
// call does not move a counter.
func (b *batcher) exec(batch []*call) {
	live := batch[:0:0]
	for _, c := range batch {
		if err := c.ctx.Err(); err != nil {
			b.finish(c, nil, err)
			continue
		}
		live = append(live, c)
	}
	switch len(live) {
	case 0:
		return
	case 1:
		// Alone, a call runs under its own context, as a direct call would.
		c := live[0]
		reply, err := decideScript.Run(c.ctx, b.client, c.keys, c.args...).Int64Slice()
		b.finish(c, reply, err)
		return
	}
	cmds := b.pipeline(live, false)
	var retry []*call
	for i, c := range live {
		if redis.HasErrorPrefix(cmds[i].Err(), "NOSCRIPT") {
			retry = append(retry, c)
			continue
		}
		reply, err := cmds[i].Int64Slice()
		b.finish(c, reply, err)
	}
	if len(retry) > 0 {
		// The server lost its script cache (restart, failover, SCRIPT
		// FLUSH): EVAL sends the source and loads it again.
		cmds = b.pipeline(retry, true)
		for i, c := range retry {
			reply, err := cmds[i].Int64Slice()
			b.finish(c, reply, err)
		}
	}
}

func (b *batcher) pipeline(calls []*call, eval bool) []*redis.Cmd {
	pipe := b.client.Pipeline()
	cmds := make([]*redis.Cmd, len(calls))
	for i, c := range calls {
		if eval {
			cmds[i] = decideScript.Eval(b.ctx, pipe, c.keys, c.args...)
		} else {
			cmds[i] = decideScript.EvalSha(b.ctx, pipe, c.keys, c.args...)
		}
	}
	// Exec's error is the first command's; each command keeps its own.
	_, _ = pipe.Exec(b.ctx)
	return cmds
}

func (b *batcher) finish(c *call, reply []int64, err error) {
	c.reply, c.err = reply, err
	c.done <- struct{}{}
}
