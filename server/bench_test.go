package server

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/ratelimit/memlimit"
	"github.com/sluicehq/sluice/server/config"
)

// BenchmarkLimitHandler is the server's own cost per decision: routing,
// auth, JSON in and out, headers, metrics and the limiter on memlimit,
// without the network (a recorder as the response writer).
func BenchmarkLimitHandler(b *testing.B) {
	cfg, err := config.Parse([]byte("limits:\n  scenes:\n    member:\n      subject: [member]\n      policies:\n        api: {limits: [{quota: 100, window: 1s}]}\n"), "bench.yaml")
	if err != nil {
		b.Fatal(err)
	}
	store := memlimit.New(memlimit.Options{})
	defer store.Close()
	srv, err := New(Options{Config: cfg, Limits: store, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	h := srv.Handler()
	bodies := make([]string, 1024)
	for i := range bodies {
		bodies[i] = `{"subject":{"member":"` + strconv.Itoa(i) + `"}}`
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// http.NewRequest rather than httptest.NewRequest, which parses a
		// whole request text and would dominate the measurement.
		req, _ := http.NewRequest("POST", "/v1/limits/member/api", strings.NewReader(bodies[i%len(bodies)]))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 && rec.Code != 429 {
			b.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	}
}
