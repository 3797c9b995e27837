package keyspace

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestJoinFastGPTExamples(t *testing.T) {
	tests := []struct {
		ns   string
		segs []string
		want string
	}{
		{"chat:resume:v2", []string{"team/1", "chat:2", "a*b!c(d)'e", "0"}, "chat:resume:v2:team%2F1:chat%3A2:a%2Ab%21c%28d%29%27e:0"},
		{"rate-limit", []string{"ip", "wechat-login-qrcode", "ip", "192.0.2.1"}, "rate-limit:ip:wechat-login-qrcode:ip:192.0.2.1"},
		{"rate-limit", []string{"account-verification", "code-consume", "register", "account", "user@example.com"}, "rate-limit:account-verification:code-consume:register:account:user%40example.com"},
		{"x", []string{"{tag}", "ü"}, "x:%7Btag%7D:%C3%BC"},
	}
	for _, tt := range tests {
		got, err := Join(tt.ns, tt.segs...)
		if err != nil || got != tt.want {
			t.Errorf("Join(%q, %q) = %q, %v; want %q", tt.ns, tt.segs, got, err, tt.want)
		}
	}
}

func TestJoinRejects(t *testing.T) {
	tests := []struct {
		name string
		ns   string
		segs []string
	}{
		{"empty namespace", "", []string{"a"}},
		{"namespace with space", "a b", []string{"a"}},
		{"namespace trailing colon", "a:", []string{"a"}},
		{"namespace double colon", "a::b", []string{"a"}},
		{"namespace brace", "a{b}", []string{"a"}},
		{"empty segment", "a", []string{"x", ""}},
	}
	for _, tt := range tests {
		if _, err := Join(tt.ns, tt.segs...); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("%s: err = %v, want ErrInvalidKey", tt.name, err)
		}
	}
}

func TestJoinTagged(t *testing.T) {
	got, err := JoinTagged("rate-limit", 2, 4, "member", "export", "member", "m{1}")
	want := "rate-limit:member:export:{member:m%7B1%7D}"
	if err != nil || got != want {
		t.Fatalf("JoinTagged = %q, %v; want %q", got, err, want)
	}
	if _, err := JoinTagged("a", 1, 3, "x", "y"); err == nil {
		t.Fatal("JoinTagged accepted a tag range past the segments")
	}
	segs, err := Split("rate-limit", got)
	if err != nil || !slices.Equal(segs, []string{"member", "export", "member", "m{1}"}) {
		t.Fatalf("Split = %q, %v", segs, err)
	}
}

func TestPrefix(t *testing.T) {
	p := Prefix("fastgpt:")
	phys, err := p.Physical("rate-limit:ip:x")
	if err != nil || phys != "fastgpt:rate-limit:ip:x" {
		t.Fatalf("Physical = %q, %v", phys, err)
	}
	if _, err := p.Physical("fastgpt:x"); err == nil {
		t.Error("Physical accepted a logical key that starts with the prefix")
	}
	logical, err := p.Logical(phys)
	if err != nil || logical != "rate-limit:ip:x" {
		t.Fatalf("Logical = %q, %v", logical, err)
	}
	for _, bad := range []string{"fastgpt:fastgpt:x", "other:x", "fastgpt:"} {
		if _, err := p.Logical(bad); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("Logical(%q) err = %v, want ErrInvalidKey", bad, err)
		}
	}
	pat, err := p.ScanPattern(`a:b*c?[d]\e`)
	if want := `fastgpt:a:b\*c\?\[d\]\\e:*`; err != nil || pat != want {
		t.Fatalf("ScanPattern = %q, %v; want %q", pat, err, want)
	}
	if err := Prefix("nocolon").Validate(); err == nil {
		t.Error("Validate accepted a prefix without ':'")
	}
}

func TestUnescapeRejectsNonCanonical(t *testing.T) {
	for _, in := range []string{"%2f", "%41", "a:b", "%", "%2", "%G1"} {
		if _, err := Unescape(in); err == nil {
			t.Errorf("Unescape(%q) accepted non-canonical input", in)
		}
	}
}

func FuzzEscapeRoundTrip(f *testing.F) {
	for _, s := range []string{"", "team/1", "chat:2", "a*b!c(d)'e", "{x}", "ü", "%41"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e := Escape(s)
		if strings.ContainsAny(e, ":{}*?[]\\ ") {
			t.Fatalf("Escape(%q) = %q keeps a structural character", s, e)
		}
		back, err := Unescape(e)
		if err != nil || back != s {
			t.Fatalf("Unescape(Escape(%q)) = %q, %v", s, back, err)
		}
	})
}

func FuzzJoinInjective(f *testing.F) {
	f.Add("a", "b", "a:b", "")
	f.Add("a:b", "", "a", "b")
	f.Add("%3A", "x", ":", "x")
	f.Fuzz(func(t *testing.T, a1, a2, b1, b2 string) {
		x := nonEmpty(a1, a2)
		y := nonEmpty(b1, b2)
		if len(x) == 0 || len(y) == 0 {
			return
		}
		kx, err1 := Join("ns", x...)
		ky, err2 := Join("ns", y...)
		if err1 != nil || err2 != nil {
			t.Fatalf("Join failed: %v %v", err1, err2)
		}
		if (kx == ky) != slices.Equal(x, y) {
			t.Fatalf("Join(%q) = %q and Join(%q) = %q", x, kx, y, ky)
		}
	})
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

func FuzzValidNamespaceMatchesPattern(f *testing.F) {
	for _, s := range []string{"a", "a:b", "a::b", ":a", "a:", "a.b", "rate-limit", "x_y:Z-9", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := ValidNamespace(s), namespacePattern.MatchString(s); got != want {
			t.Fatalf("ValidNamespace(%q) = %v, pattern says %v", s, got, want)
		}
	})
}
