package webhook_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
	"github.com/sluicehq/sluice/queue/webhook"
)

// A receiver checks the signature over the raw body before trusting it,
// and rejects stale timestamps so a captured request cannot be replayed.
func ExampleVerify() {
	const secret = "whsec-example"
	receive := func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err != nil {
			http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
			return
		}
		sig := r.Header.Get(webhook.SignatureHeader)
		if err := webhook.Verify(secret, sig, body, 5*time.Minute, time.Now()); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		// Deliveries are at least once: skip an event id already handled
		// (keep the ids for longer than the tolerance).
		var e queue.Event
		_ = json.Unmarshal(body, &e)
		w.WriteHeader(http.StatusNoContent)
	}

	body := []byte(`{"id":"evt_1","type":"job.completed","job_id":"42"}`)
	for _, c := range []struct {
		name string
		sig  string
	}{
		{"signed now", webhook.Sign(secret, time.Now(), body)},
		{"signed an hour ago", webhook.Sign(secret, time.Now().Add(-time.Hour), body)},
		{"wrong secret", webhook.Sign("guess", time.Now(), body)},
	} {
		req := httptest.NewRequest(http.MethodPost, "/hooks/sluice", bytes.NewReader(body))
		req.Header.Set(webhook.SignatureHeader, c.sig)
		rec := httptest.NewRecorder()
		receive(rec, req)
		fmt.Println(c.name, rec.Code)
	}
	// Output:
	// signed now 204
	// signed an hour ago 401
	// wrong secret 401
}

// A worker completes a job; the backend records job.completed in the same
// transaction, and a dispatcher delivers it to the subscription.
func ExampleDispatcher() {
	dir, err := os.MkdirTemp("", "webhook-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	b, err := sqlitequeue.Open(filepath.Join(dir, "queue.db"), sqlitequeue.Options{Outbox: true})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()

	got := make(chan string, 1)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		err := webhook.Verify("s3cret", r.Header.Get(webhook.SignatureHeader), body, time.Minute, time.Now())
		var e queue.Event
		_ = json.Unmarshal(body, &e)
		got <- fmt.Sprintf("%s of a %s job, signature ok: %v", e.Type, e.Kind, err == nil)
	}))
	defer receiver.Close()

	d, err := webhook.New(b, webhook.Config{
		Subscriptions: []webhook.Subscription{{
			Name: "billing", URL: receiver.URL, Secret: "s3cret", Events: []string{"job.completed"},
		}},
		// The example's receiver listens on 127.0.0.1, which the guard
		// refuses by default.
		Guard: webhook.Guard{AllowAll: true},
	})
	if err != nil {
		log.Fatal(err)
	}
	w := queue.NewWorker(b, queue.WorkerConfig{Queues: []string{"mail"}})
	w.Handle("send", queue.HandlerFunc(func(ctx context.Context, j *queue.Job) ([]byte, error) {
		return nil, nil
	}))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = w.Run(ctx) }()
	go func() { defer wg.Done(); _ = d.Run(ctx) }()

	if _, err := queue.NewClient(b).Enqueue(ctx, queue.JobSpec{Queue: "mail", Kind: "send"}); err != nil {
		log.Fatal(err)
	}
	fmt.Println(<-got)
	cancel()
	wg.Wait()
	// Output: job.completed of a send job, signature ok: true
}
