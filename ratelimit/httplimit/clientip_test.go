package httplimit_test

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/ratelimit/httplimit"
)

func mustCIDRs(t testing.TB, s ...string) []netip.Prefix {
	t.Helper()
	p, err := httplimit.ParseCIDRs(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// chain returns n comma-separated addresses 10.1.0.1, 10.1.0.2, ...
func chain(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = netip.AddrFrom4([4]byte{10, 1, byte(i >> 8), byte(i + 1)}).String()
	}
	return strings.Join(parts, ", ")
}

func TestClientIP(t *testing.T) {
	t.Parallel()
	local := mustCIDRs(t, "127.0.0.1", "::1")
	proxies := mustCIDRs(t, "127.0.0.1", "10.0.0.0/8")
	longHeader := "203.0.113.50," + strings.Repeat(" ", httplimit.MaxForwardedLen-len("203.0.113.50,"))
	tests := []struct {
		name    string
		remote  string
		xff     []string
		realIP  string
		trusted []netip.Prefix
		v6      int
		want    string
	}{
		{name: "socket peer", remote: "192.0.2.1:1234", want: "192.0.2.1"},
		{name: "spoofed XFF from untrusted peer ignored", remote: "192.0.2.1:1234", xff: []string{"6.6.6.6"}, want: "192.0.2.1"},
		{name: "spoofed X-Real-IP from untrusted peer ignored", remote: "192.0.2.1:1234", realIP: "6.6.6.6", want: "192.0.2.1"},
		{name: "untrusted peer even with trusted list", remote: "192.0.2.1:1234", xff: []string{"6.6.6.6"}, trusted: local, want: "192.0.2.1"},
		{name: "trusted peer: right-most untrusted hop", remote: "127.0.0.1:5555", xff: []string{"6.6.6.6, 203.0.113.50"}, trusted: local, want: "203.0.113.50"},
		{name: "trusted hops skipped", remote: "127.0.0.1:5555", xff: []string{"6.6.6.6, 203.0.113.50, 10.0.0.2,10.9.9.9"}, trusted: proxies, want: "203.0.113.50"},
		{name: "all-trusted chain gives left-most", remote: "127.0.0.1:5555", xff: []string{"10.0.0.1, 10.0.0.2"}, trusted: proxies, want: "10.0.0.1"},
		{name: "several XFF lines form one list", remote: "127.0.0.1:5555", xff: []string{"6.6.6.6", "203.0.113.50, 10.0.0.2"}, trusted: proxies, want: "203.0.113.50"},
		{name: "empty list elements ignored", remote: "127.0.0.1:5555", xff: []string{"203.0.113.50, ,, 10.0.0.2"}, trusted: proxies, want: "203.0.113.50"},
		{name: "hop with port", remote: "127.0.0.1:5555", xff: []string{"203.0.113.50:4711"}, trusted: local, want: "203.0.113.50"},
		{name: "IPv6 hop with brackets and port", remote: "127.0.0.1:5555", xff: []string{"[2001:DB8::1]:80"}, trusted: local, want: "2001:db8::1"},
		{name: "IPv6 hop in brackets", remote: "127.0.0.1:5555", xff: []string{"[2001:db8::1]"}, trusted: local, want: "2001:db8::1"},
		{name: "garbage before the client is never read", remote: "127.0.0.1:5555", xff: []string{"bogus, 203.0.113.50"}, trusted: local, want: "203.0.113.50"},
		{name: "garbage where the client should be", remote: "127.0.0.1:5555", xff: []string{"203.0.113.50, bogus"}, trusted: local, want: "unknown"},
		{name: "XFF at the length bound", remote: "127.0.0.1:5555", xff: []string{longHeader}, trusted: local, want: "203.0.113.50"},
		{name: "over-long XFF unresolved", remote: "127.0.0.1:5555", xff: []string{longHeader + " "}, trusted: local, want: "unknown"},
		{name: "over-long XFF over lines unresolved", remote: "127.0.0.1:5555", xff: []string{longHeader, ""}, trusted: local, want: "unknown"},
		{name: "over-long XFF does not fall back to X-Real-IP", remote: "127.0.0.1:5555", xff: []string{longHeader + " "}, realIP: "6.6.6.6", trusted: local, want: "unknown"},
		{name: "32 hops read", remote: "127.0.0.1:5555", xff: []string{chain(32)}, trusted: local, want: "10.1.0.32"},
		{name: "33 hops unresolved", remote: "127.0.0.1:5555", xff: []string{chain(33)}, trusted: local, want: "unknown"},
		{name: "33 hops over lines unresolved", remote: "127.0.0.1:5555", xff: []string{chain(16), chain(17)}, trusted: local, want: "unknown"},
		{name: "X-Real-IP from trusted peer", remote: "127.0.0.1:5555", realIP: " 203.0.113.7 ", trusted: local, want: "203.0.113.7"},
		{name: "XFF wins over X-Real-IP", remote: "127.0.0.1:5555", xff: []string{"203.0.113.50"}, realIP: "203.0.113.7", trusted: local, want: "203.0.113.50"},
		{name: "bad X-Real-IP unresolved", remote: "127.0.0.1:5555", realIP: "localhost", trusted: local, want: "unknown"},
		{name: "trusted peer without headers is the client", remote: "127.0.0.1:5555", trusted: local, want: "127.0.0.1"},
		{name: "IPv6 peer canonical", remote: "[2001:0DB8:0:0:0:0:0:1]:1234", want: "2001:db8::1"},
		{name: "IPv6 zone stripped", remote: "[fe80::1%eth0]:1234", want: "fe80::1"},
		{name: "IPv4-mapped unmapped", remote: "[::ffff:192.0.2.1]:1234", want: "192.0.2.1"},
		{name: "IPv4-mapped proxy trusted by IPv4 prefix", remote: "[::ffff:127.0.0.1]:1234", xff: []string{"203.0.113.50"}, trusted: local, want: "203.0.113.50"},
		{name: "IPv6 trusted proxy", remote: "[::1]:1234", xff: []string{"2001:db8:1:2:3:4:5:6"}, trusted: local, want: "2001:db8:1:2:3:4:5:6"},
		{name: "IPv6 bucketed by /64", remote: "[2001:db8:1:2:3:4:5:6]:1234", v6: 64, want: "2001:db8:1:2::/64"},
		{name: "IPv6 bucketed from XFF", remote: "[::1]:1234", xff: []string{"2001:db8:1:2:ffff::9"}, trusted: local, v6: 64, want: "2001:db8:1:2::/64"},
		{name: "IPv6 /128 keeps the address", remote: "[2001:db8::1]:1234", v6: 128, want: "2001:db8::1"},
		{name: "IPv4 not bucketed", remote: "192.0.2.1:1234", v6: 64, want: "192.0.2.1"},
		{name: "RemoteAddr without port", remote: "192.0.2.1", want: "192.0.2.1"},
		{name: "empty RemoteAddr", remote: "", want: "unknown"},
		{name: "unix socket peer", remote: "@", want: "unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr = tt.remote
			for _, v := range tt.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			if tt.realIP != "" {
				r.Header.Set("X-Real-IP", tt.realIP)
			}
			got := httplimit.ClientIP(r, httplimit.Options{TrustedProxies: tt.trusted, IPv6Prefix: tt.v6})
			if got != tt.want {
				t.Errorf("ClientIP(remote %q, XFF %q, X-Real-IP %q) = %q, want %q", tt.remote, tt.xff, tt.realIP, got, tt.want)
			}
		})
	}
}

// TestClientIPOverRealConnection checks the seed's case end to end: the
// socket peer of a real HTTP connection is 127.0.0.1, trusted, so the
// client comes from X-Forwarded-For; untrusted, the header is ignored.
func TestClientIPOverRealConnection(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		trusted []netip.Prefix
		want    string
	}{
		{name: "trusted loopback proxy", trusted: mustCIDRs(t, "127.0.0.1/32"), want: "203.0.113.50"},
		{name: "untrusted loopback peer", want: "127.0.0.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			opts := httplimit.Options{TrustedProxies: tt.trusted}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = w.Write([]byte(httplimit.ClientIP(r, opts)))
			}))
			defer srv.Close()
			req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
			req.Header.Set("X-Forwarded-For", "6.6.6.6, 203.0.113.50")
			got := string(do(t, srv.Client(), req).body)
			if got != tt.want {
				t.Errorf("client IP = %q, want %q", got, tt.want)
			}
		})
	}
}

func BenchmarkClientIP(b *testing.B) {
	opts := httplimit.Options{TrustedProxies: mustCIDRs(b, "127.0.0.1", "10.0.0.0/8")}
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = "127.0.0.1:5555"
	r.Header.Set("X-Forwarded-For", "6.6.6.6, 203.0.113.50, 10.0.0.2")
	b.ReportAllocs()
	for b.Loop() {
		if httplimit.ClientIP(r, opts) != "203.0.113.50" {
			b.Fatal("wrong client")
		}
	}
}
