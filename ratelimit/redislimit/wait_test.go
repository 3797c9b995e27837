package redislimit_test

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/ratelimit/redislimit"
)

// hungServer accepts connections and never answers.
type hungServer struct {
	ln       net.Listener
	accepted chan struct{}
	mu       sync.Mutex
	conns    []net.Conn
	wg       sync.WaitGroup
}

func newHungServer(t *testing.T) *hungServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &hungServer{ln: ln, accepted: make(chan struct{}, 16)}
	h.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			h.mu.Lock()
			h.conns = append(h.conns, c)
			h.mu.Unlock()
			h.wg.Go(func() { _, _ = io.Copy(io.Discard, c) })
			h.accepted <- struct{}{}
		}
	})
	return h
}

func (h *hungServer) close() {
	_ = h.ln.Close()
	h.mu.Lock()
	for _, c := range h.conns {
		_ = c.Close()
	}
	h.mu.Unlock()
	h.wg.Wait()
}

// TestCancelWhileWaiting: a caller waiting for its batch, or for a pipeline
// in flight, returns its context's error without waiting for Redis; Close
// then returns once the pipeline in flight ends.
func TestCancelWhileWaiting(t *testing.T) {
	t.Parallel()
	h := newHungServer(t)
	c := redis.NewClient(&redis.Options{Addr: h.ln.Addr().String(), MaxRetries: -1})
	defer c.Close()
	s, err := redislimit.New(c, redislimit.Options{Pipelines: 1})
	if err != nil {
		t.Fatal(err)
	}
	l := ratelimit.PerMinute(1)
	ctx1, cancel1 := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() {
		_, err := s.Consume(ctx1, req("a", l, 1))
		first <- err
	}()
	<-h.accepted // the only pipeline worker is now stuck on the first call

	ctx2, cancel2 := context.WithCancel(context.Background())
	second := make(chan error, 1)
	go func() {
		_, err := s.Consume(ctx2, req("b", l, 1))
		second <- err
	}()
	cancel2()
	if err := <-second; !errors.Is(err, context.Canceled) {
		t.Errorf("caller waiting for a batch: err = %v, want context.Canceled", err)
	}
	cancel1()
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Errorf("caller in a pipeline in flight: err = %v, want context.Canceled", err)
	}
	h.close()
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}
