package ratelimit_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/ratelimit"
)

// lockedBuffer is a log sink safe for the limiter's concurrent callers.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// An outage answered by the failure mode logs its first fault, not one line
// per decision: a server during an outage decides thousands a second.
func TestStoreFaultsLoggedOncePerInterval(t *testing.T) {
	t.Parallel()
	mem, _ := newMem(t)
	store := &faultyStore{Store: mem}
	store.down.Store(true)
	var buf lockedBuffer
	l := mustDefine(t, store, ipScene(fixedLimit(5)), ratelimit.WithLogger(slog.New(slog.NewTextHandler(&buf, nil))))
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 250; i++ {
				if ok, err := l.Allow(context.Background(), ipCall{Policy: "login", IP: "192.0.2.1"}); !ok || err != nil {
					t.Errorf("fail-open Allow = %v, %v; want true, nil", ok, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if got := strings.Count(buf.String(), "store fault"); got != 1 {
		t.Errorf("1,000 faults within the interval logged %d lines, want 1:\n%s", got, buf.String())
	}
}
