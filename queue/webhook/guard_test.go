package webhook_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice/queue/webhook"
)

func TestGuardCheck(t *testing.T) {
	t.Parallel()
	cases := []struct {
		addr   string
		reason string // "" when allowed
	}{
		{"93.184.216.34", ""},
		{"2606:2800:220:1:248:1893:25c8:1946", ""},
		{"8.8.8.8", ""},
		{"127.0.0.1", "loopback"},
		{"127.8.9.10", "loopback"},
		{"::1", "loopback"},
		{"10.1.2.3", "private"},
		{"172.16.0.1", "private"},
		{"172.31.255.255", "private"},
		{"172.32.0.1", ""},
		{"192.168.1.1", "private"},
		{"fd12:3456::1", "private"},
		{"169.254.169.254", "cloud metadata"},
		{"fd00:ec2::254", "cloud metadata"},
		{"169.254.1.1", "link-local"},
		{"fe80::1", "link-local"},
		{"100.64.0.1", "shared (CGNAT)"},
		{"100.127.255.255", "shared (CGNAT)"},
		{"100.128.0.1", ""},
		{"224.0.0.1", "multicast"},
		{"ff02::1", "multicast"},
		{"0.0.0.0", "unspecified"},
		{"::", "unspecified"},
		{"255.255.255.255", "reserved"},
		{"::ffff:127.0.0.1", "loopback"},
		{"::ffff:169.254.169.254", "cloud metadata"},
		{"64:ff9b::a9fe:a9fe", "cloud metadata"},
		{"64:ff9b::808:808", ""},
	}
	var g webhook.Guard
	for _, c := range cases {
		err := g.Check(netip.MustParseAddr(c.addr))
		var re *webhook.RefusedError
		switch {
		case c.reason == "" && err != nil:
			t.Errorf("Check(%s) = %v, want allowed", c.addr, err)
		case c.reason != "" && (!errors.As(err, &re) || re.Reason != c.reason || !errors.Is(err, webhook.ErrRefused)):
			t.Errorf("Check(%s) = %v, want refused as %s", c.addr, err, c.reason)
		}
	}
}

func TestGuardAllow(t *testing.T) {
	t.Parallel()
	g := webhook.Guard{Allow: []netip.Prefix{netip.MustParsePrefix("10.20.0.0/16")}}
	cases := []struct {
		addr string
		ok   bool
	}{
		{"10.20.3.4", true},
		{"::ffff:10.20.3.4", true},
		{"10.21.0.1", false},
		{"127.0.0.1", false},
	}
	for _, c := range cases {
		if err := g.Check(netip.MustParseAddr(c.addr)); (err == nil) != c.ok {
			t.Errorf("Check(%s) with 10.20.0.0/16 allowed = %v, want ok=%v", c.addr, err, c.ok)
		}
	}
	if err := (webhook.Guard{AllowAll: true}).Check(netip.MustParseAddr("169.254.169.254")); err != nil {
		t.Errorf("AllowAll refused: %v", err)
	}
}

// TestClientRefusesAtDialTime sends real requests to a receiver on
// 127.0.0.1: by address, by a name the system resolves (localhost), and by
// a name an injected resolver maps to it, as a rebinding DNS server would.
// The receiver must see none of them; allowing the prefix lets them in.
func TestClientRefusesAtDialTime(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	rebind := func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	loop := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	cases := []struct {
		name    string
		url     string
		guard   webhook.Guard
		resolve webhook.Resolver
		refused bool
	}{
		{"address", srv.URL, webhook.Guard{}, nil, true},
		{"localhost", "http://localhost:" + port, webhook.Guard{}, nil, true},
		{"rebinding name", "http://receiver.example.com:" + port, webhook.Guard{}, rebind, true},
		{"allowed address", srv.URL, webhook.Guard{Allow: loop}, nil, false},
		{"allowed rebinding name", "http://receiver.example.com:" + port, webhook.Guard{Allow: loop}, rebind, false},
	}
	want := int32(0)
	for _, c := range cases {
		cl := webhook.NewClient(c.guard, c.resolve)
		resp, err := cl.Get(c.url)
		if resp != nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		cl.CloseIdleConnections()
		if got := errors.Is(err, webhook.ErrRefused); got != c.refused {
			t.Errorf("%s: Get error = %v, want refused=%v", c.name, err, c.refused)
		}
		if !c.refused {
			want++
		}
		if got := hits.Load(); got != want {
			t.Errorf("%s: receiver saw %d requests, want %d", c.name, got, want)
		}
	}
}

func TestClientDoesNotFollowRedirects(t *testing.T) {
	t.Parallel()
	var followed atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/next" {
			followed.Store(true)
			return
		}
		http.Redirect(w, r, "/next", http.StatusFound)
	}))
	defer srv.Close()
	cl := webhook.NewClient(webhook.Guard{AllowAll: true}, nil)
	defer cl.CloseIdleConnections()
	resp, err := cl.Post(srv.URL, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || followed.Load() {
		t.Fatalf("status %d, followed %v; want the 302 itself", resp.StatusCode, followed.Load())
	}
}
