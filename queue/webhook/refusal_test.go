package webhook_test

import (
	"net/netip"
	"testing"

	"github.com/sluicehq/sluice/queue/webhook"
)

// A refusal says how to allow the address, in the words of whoever set
// the guard up.
func TestRefusalNamesTheSetting(t *testing.T) {
	t.Parallel()
	cases := []struct {
		guard webhook.Guard
		want  string
	}{
		{webhook.Guard{}, "webhook: refusing to connect to 127.0.0.1 (loopback address; allow it with Guard.Allow)"},
		{webhook.Guard{AllowSetting: "webhooks.allow_networks"},
			"webhook: refusing to connect to 127.0.0.1 (loopback address; allow it with webhooks.allow_networks)"},
	}
	for _, c := range cases {
		err := c.guard.Check(netip.MustParseAddr("127.0.0.1"))
		if err == nil || err.Error() != c.want {
			t.Errorf("Check = %v\nwant %s", err, c.want)
		}
	}
}
