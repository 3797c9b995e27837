package webhook_test

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/webhook"
)

func TestSubscriptionWants(t *testing.T) {
	t.Parallel()
	cases := []struct {
		events []string
		typ    queue.EventType
		want   bool
	}{
		{nil, queue.EventJobFailed, true},
		{[]string{"*"}, queue.EventGroupCompleted, true},
		{[]string{"job.failed"}, queue.EventJobFailed, true},
		{[]string{"job.failed"}, queue.EventJobCompleted, false},
		{[]string{"job.completed", "group.completed"}, queue.EventGroupCompleted, true},
	}
	for _, c := range cases {
		s := webhook.Subscription{Name: "a", URL: "https://example.com", Events: c.events}
		if got := s.Wants(c.typ); got != c.want {
			t.Errorf("Events %v: Wants(%s) = %v, want %v", c.events, c.typ, got, c.want)
		}
	}
}

func TestSubscriptionValidate(t *testing.T) {
	t.Parallel()
	ok := webhook.Subscription{Name: "billing-1.prod_x", URL: "https://example.com/hook", Events: []string{"job.completed", "*"}}
	cases := []struct {
		name    string
		edit    func(*webhook.Subscription)
		wantErr string // "" for valid
	}{
		{"valid", func(*webhook.Subscription) {}, ""},
		{"http", func(s *webhook.Subscription) { s.URL = "http://example.com" }, ""},
		{"no name", func(s *webhook.Subscription) { s.Name = "" }, "Name must be 1 to 64"},
		{"long name", func(s *webhook.Subscription) { s.Name = strings.Repeat("a", 65) }, "Name must be 1 to 64"},
		{"name with a space", func(s *webhook.Subscription) { s.Name = "a b" }, "Name may hold only"},
		{"relative URL", func(s *webhook.Subscription) { s.URL = "/hook" }, "URL must be"},
		{"ftp URL", func(s *webhook.Subscription) { s.URL = "ftp://example.com" }, "URL must be"},
		{"bad URL", func(s *webhook.Subscription) { s.URL = "http://[::1" }, "URL must be"},
		{"unknown event", func(s *webhook.Subscription) { s.Events = []string{"job.started"} }, `unknown event type "job.started"`},
	}
	for _, c := range cases {
		s := ok
		c.edit(&s)
		err := s.Validate()
		if c.wantErr == "" && err != nil || c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)) {
			t.Errorf("%s: Validate = %v, want %q", c.name, err, c.wantErr)
		}
	}
}
