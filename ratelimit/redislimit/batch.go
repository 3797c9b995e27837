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

// batcher gathers concurrent calls into pipelines. Each of its workers takes
// one call, then every call already waiting (up to max), and sends them as
// one pipeline. While a worker's pipeline is in flight, new calls wait on
// the unbuffered channel in, so the next batch gathers there. Because in is
// unbuffered, a call handed over is always completed by the worker that took
// it, and a call not handed over can never be stranded by close.
type batcher struct {
	client redis.UniversalClient
	max    int
	in     chan *call
	stop   chan struct{}
	ctx    context.Context // cancelled by close, bounding pipelines in flight
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newBatcher(client redis.UniversalClient, max, workers int) *batcher {
	ctx, cancel := context.WithCancel(context.Background())
	b := &batcher{client: client, max: max, in: make(chan *call), stop: make(chan struct{}), ctx: ctx, cancel: cancel}
	b.wg.Add(workers)
	for range workers {
		go b.run()
	}
	return b
}

// do runs the script for keys and args in the next batch and returns its
// reply. It returns ctx's error as soon as ctx is done, even when the call
// is already in a pipeline (whose result is then dropped).
func (b *batcher) do(ctx context.Context, keys []string, args []any) ([]int64, error) {
	c := callPool.Get().(*call)
	c.ctx, c.keys, c.args = ctx, keys, args
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
		reply, err := c.reply, c.err
		b.release(c)
		return reply, err
	case <-ctx.Done():
		// The worker still owns c and will signal done; c is left to the
		// garbage collector instead of the pool.
		return nil, ctx.Err()
	}
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
		clear(batch)
	}
}

// gather waits for one call, then takes every call already waiting, up to
// max. It reports false when the batcher is closing.
func (b *batcher) gather(batch []*call) ([]*call, bool) {
	select {
	case c := <-b.in:
		batch = append(batch, c)
	case <-b.stop:
		return batch, false
	}
	for len(batch) < b.max {
		select {
		case c := <-b.in:
			batch = append(batch, c)
		default:
			return batch, true
		}
	}
	return batch, true
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
		c := live[0]
		reply, err := decideScript.Run(b.ctx, b.client, c.keys, c.args...).Int64Slice()
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
