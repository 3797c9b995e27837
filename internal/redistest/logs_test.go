package redistest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// A client dialling a port nobody listens on makes go-redis log the failed
// dial: the held log keeps the line for a failed run's flush, bounded to
// the last lines.
func TestHoldLogs(t *testing.T) {
	l := hold()
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	defer c.Close()
	if err := c.Ping(t.Context()).Err(); err == nil {
		t.Fatal("Ping on a closed port succeeded")
	}
	var b strings.Builder
	l.writeTo(&b)
	if out := b.String(); !strings.Contains(out, "connection refused") || !strings.HasPrefix(out, "go-redis logged") {
		t.Fatalf("held lines:\n%s\nwant go-redis's failed dial", out)
	}
	for i := range heldLines + 5 {
		l.Printf(context.Background(), "line %d", i)
	}
	b.Reset()
	l.writeTo(&b)
	out := b.String()
	if n := strings.Count(out, "\n  redis: "); n != heldLines || !strings.Contains(out, fmt.Sprintf("line %d\n", heldLines+4)) || !strings.Contains(out, "left out") {
		t.Fatalf("after %d more lines, %d held:\n%.300s...", heldLines+5, n, out)
	}
}
