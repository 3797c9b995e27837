package redistest

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// heldLines bounds what HoldLogs keeps: the last lines are the ones that
// explain a failure.
const heldLines = 500

// HoldLogs routes go-redis's own log lines away from the test output:
// tests that refuse connections on purpose (outages, breakers, restarts)
// make go-redis log every failed dial, and a passing run should not print
// them. It returns the function a TestMain calls with the run's exit code:
// after a failed run it prints the lines held (the last 500) to stderr, as
// the testing package prints a failed test's log. With goleak:
//
//	func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.Cleanup(redistest.HoldLogs())) }
func HoldLogs() (flush func(exitCode int)) {
	l := hold()
	return func(exitCode int) {
		if exitCode != 0 {
			l.writeTo(os.Stderr)
		}
	}
}

// hold makes a heldLog go-redis's logger.
func hold() *heldLog {
	l := &heldLog{}
	redis.SetLogger(l)
	return l
}

// heldLog is a go-redis logger that keeps the last heldLines lines.
type heldLog struct {
	mu      sync.Mutex
	lines   []string
	dropped int
}

// Printf implements go-redis's logging interface.
func (l *heldLog) Printf(_ context.Context, format string, v ...any) {
	line := time.Now().Format("15:04:05.000 ") + strings.TrimSpace(fmt.Sprintf(format, v...))
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) == heldLines {
		l.lines = l.lines[1:]
		l.dropped++
	}
	l.lines = append(l.lines, line)
}

// writeTo writes the lines held, saying how many earlier ones were dropped.
func (l *heldLog) writeTo(w io.Writer) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) == 0 {
		return
	}
	fmt.Fprintf(w, "go-redis logged %d lines during the run", len(l.lines)+l.dropped)
	if l.dropped > 0 {
		fmt.Fprintf(w, " (the first %d left out)", l.dropped)
	}
	fmt.Fprintln(w, ":")
	for _, line := range l.lines {
		fmt.Fprintln(w, "  redis: "+line)
	}
}
