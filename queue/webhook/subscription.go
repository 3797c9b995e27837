package webhook

import (
	"fmt"
	"net/url"
	"slices"

	"github.com/sluicehq/sluice/queue"
)

// AllEvents is the event filter that matches every event type.
const AllEvents = "*"

// Subscription is one receiver of events.
type Subscription struct {
	// Name identifies the subscription in the delivery log: 1 to 64
	// letters, digits, '.', '_' or '-', unique within a Dispatcher.
	// Renaming a subscription starts its deliveries afresh.
	Name string
	// URL receives the events by POST; http or https with a host.
	URL string
	// Secret keys the HMAC in the Sluice-Signature header. Empty sends no
	// signature, which leaves the receiver unable to tell forged requests
	// from real ones: set one.
	Secret string
	// Events lists the event types wanted, such as "job.completed", or
	// AllEvents ("*"). Empty means every event.
	Events []string
	// Headers are added to every request; Sluice's own headers win.
	Headers map[string]string
}

// Wants reports whether the subscription's filter matches t.
func (s Subscription) Wants(t queue.EventType) bool {
	return len(s.Events) == 0 || slices.Contains(s.Events, AllEvents) || slices.Contains(s.Events, string(t))
}

// Validate checks the subscription and returns an error naming the field
// and the rule it breaks.
func (s Subscription) Validate() error {
	if err := validName(s.Name); err != nil {
		return err
	}
	u, err := url.Parse(s.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("webhook: subscription %q: URL must be an absolute http or https URL, got %q", s.Name, s.URL)
	}
	for _, e := range s.Events {
		if e != AllEvents && !slices.Contains(queue.EventTypes, queue.EventType(e)) {
			return fmt.Errorf("webhook: subscription %q: Events has unknown event type %q (known: %v or %q)",
				s.Name, e, queue.EventTypes, AllEvents)
		}
	}
	return nil
}

func validName(n string) error {
	if n == "" || len(n) > 64 {
		return fmt.Errorf("webhook: subscription Name must be 1 to 64 characters, got %q", n)
	}
	for _, r := range n {
		ok := r == '.' || r == '_' || r == '-' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')
		if !ok {
			return fmt.Errorf("webhook: subscription Name may hold only letters, digits, '.', '_' and '-', got %q", n)
		}
	}
	return nil
}
