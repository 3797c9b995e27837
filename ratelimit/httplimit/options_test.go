package httplimit_test

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/ratelimit/httplimit"
)

func TestParseCIDRs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      []string
		want    []string
		wantErr string
	}{
		{name: "empty", in: nil, want: []string{}},
		{name: "CIDRs and addresses", in: []string{"10.0.0.0/8", " 127.0.0.1 ", "::1", "fd00::/8"},
			want: []string{"10.0.0.0/8", "127.0.0.1/32", "::1/128", "fd00::/8"}},
		{name: "masked to the network", in: []string{"192.168.1.77/24"}, want: []string{"192.168.1.0/24"}},
		{name: "IPv4-mapped becomes IPv4", in: []string{"::ffff:10.0.0.0/104", "::ffff:127.0.0.1"}, want: []string{"10.0.0.0/8", "127.0.0.1/32"}},
		{name: "bad prefix length named", in: []string{"10.0.0.0/8", "10.0.0.0/33"}, wantErr: `httplimit: trusted proxy 1 ("10.0.0.0/33")`},
		{name: "host name named", in: []string{"proxy.internal"}, wantErr: `httplimit: trusted proxy 0 ("proxy.internal")`},
		{name: "empty entry named", in: []string{""}, wantErr: `httplimit: trusted proxy 0 ("")`},
		{name: "zone rejected", in: []string{"fe80::1%eth0"}, wantErr: `zone "eth0" not allowed`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := httplimit.ParseCIDRs(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseCIDRs(%q) error = %v, want one containing %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseCIDRs(%q): %v", tt.in, err)
			}
			gotS := make([]string, len(got))
			for i, p := range got {
				gotS[i] = p.String()
			}
			if strings.Join(gotS, ",") != strings.Join(tt.want, ",") {
				t.Errorf("ParseCIDRs(%q) = %v, want %v", tt.in, gotS, tt.want)
			}
		})
	}
}

func TestOptionsValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		opts    httplimit.Options
		wantErr string
	}{
		{name: "zero value", opts: httplimit.Options{}},
		{name: "/64", opts: httplimit.Options{IPv6Prefix: 64}},
		{name: "negative prefix", opts: httplimit.Options{IPv6Prefix: -1}, wantErr: "httplimit: Options.IPv6Prefix must be 0..128, got -1"},
		{name: "prefix too long", opts: httplimit.Options{IPv6Prefix: 129}, wantErr: "httplimit: Options.IPv6Prefix must be 0..128, got 129"},
		{name: "zero prefix", opts: httplimit.Options{TrustedProxies: []netip.Prefix{{}}}, wantErr: "httplimit: Options.TrustedProxies[0] is not a valid prefix"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.opts.Validate()
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.wantErr {
				t.Errorf("Validate() = %q, want %q", got, tt.wantErr)
			}
		})
	}
}

// Not parallel: it sets environment variables.
func TestEnabledFromEnv(t *testing.T) {
	tests := []struct {
		value string
		set   bool
		want  bool
	}{
		{set: false, want: false},
		{value: "", set: true, want: false},
		{value: "true", set: true, want: true},
		{value: "TRUE", set: true, want: true},
		{value: "1", set: true, want: true},
		{value: " on ", set: true, want: true},
		{value: "yes", set: true, want: true},
		{value: "false", set: true, want: false},
		{value: "0", set: true, want: false},
		{value: "enabled", set: true, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			const name = "SLUICE_TEST_USE_IP_LIMIT"
			if tt.set {
				t.Setenv(name, tt.value)
			}
			if got := httplimit.EnabledFromEnv(name); got != tt.want {
				t.Errorf("EnabledFromEnv with %q (set %v) = %v, want %v", tt.value, tt.set, got, tt.want)
			}
		})
	}
}
