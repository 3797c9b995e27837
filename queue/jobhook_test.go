package queue_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/queue"
)

func TestWebhookValidate(t *testing.T) {
	t.Parallel()
	ok := func() *queue.Webhook { return &queue.Webhook{URL: "https://h.example/x"} }
	cases := []struct {
		name  string
		edit  func(w *queue.Webhook)
		field string // empty: valid
	}{
		{"minimal", func(w *queue.Webhook) {}, ""},
		{"everything", func(w *queue.Webhook) {
			w.Events = []queue.EventType{queue.EventJobFailed}
			w.Metadata = json.RawMessage(`{"a":[1,2]}`)
			w.Headers = map[string]string{"Authorization": "Bearer x"}
		}, ""},
		{"no url", func(w *queue.Webhook) { w.URL = "" }, "JobSpec.Webhook.URL"},
		{"relative", func(w *queue.Webhook) { w.URL = "/x" }, "JobSpec.Webhook.URL"},
		{"ftp", func(w *queue.Webhook) { w.URL = "ftp://h.example/x" }, "JobSpec.Webhook.URL"},
		{"user in url", func(w *queue.Webhook) { w.URL = "https://u:p@h.example/x" }, "JobSpec.Webhook.URL"},
		{"unknown event", func(w *queue.Webhook) { w.Events = []queue.EventType{"job.done"} }, "JobSpec.Webhook.Events"},
		{"bad metadata", func(w *queue.Webhook) { w.Metadata = json.RawMessage(`{`) }, "JobSpec.Webhook.Metadata"},
		{"reserved header", func(w *queue.Webhook) { w.Headers = map[string]string{"sluice-signature": "x"} }, "JobSpec.Webhook.Headers"},
		{"host header", func(w *queue.Webhook) { w.Headers = map[string]string{"Host": "x"} }, "JobSpec.Webhook.Headers"},
		{"bad header name", func(w *queue.Webhook) { w.Headers = map[string]string{"a b": "x"} }, "JobSpec.Webhook.Headers"},
		{"header line break", func(w *queue.Webhook) { w.Headers = map[string]string{"X-A": "a\r\nB: c"} }, "JobSpec.Webhook.Headers"},
		{"too big", func(w *queue.Webhook) {
			w.Metadata = json.RawMessage(`"` + strings.Repeat("m", queue.MaxWebhookSize) + `"`)
		}, "JobSpec.Webhook"},
	}
	for _, c := range cases {
		w := ok()
		c.edit(w)
		err := queue.ValidateSpec(queue.JobSpec{Queue: "q", Kind: "k", Webhook: w}, 0)
		var got string
		if ia, isIA := err.(*queue.InvalidArgumentError); isIA {
			got = ia.Field
		} else if err != nil {
			t.Fatalf("%s: %v is not an *InvalidArgumentError", c.name, err)
		}
		if got != c.field {
			t.Errorf("%s: field %q (%v), want %q", c.name, got, err, c.field)
		}
	}
}

func TestWebhookWantsAndTrace(t *testing.T) {
	t.Parallel()
	w := &queue.Webhook{URL: "https://h.example"}
	if !w.Wants(queue.EventJobCompleted) || !w.Wants(queue.EventGroupCompleted) {
		t.Error("a webhook without events wants the final ones")
	}
	w.Events = []queue.EventType{queue.EventJobFailed}
	if w.Wants(queue.EventJobCompleted) || !w.Wants(queue.EventJobFailed) {
		t.Error("a webhook with events wants those only")
	}
	for _, tc := range []struct {
		trace string
		ok    bool
	}{
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", true},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 k=v", true},
		{"bad\nline", false},
		{strings.Repeat("a", queue.MaxTraceLen+1), false},
	} {
		err := queue.ValidateSpec(queue.JobSpec{Queue: "q", Kind: "k", Trace: tc.trace}, 0)
		if (err == nil) != tc.ok {
			t.Errorf("Trace %.20q: %v, want ok %v", tc.trace, err, tc.ok)
		}
	}
}
