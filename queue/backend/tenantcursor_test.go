package backend_test

import (
	"errors"
	"testing"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

func TestTenantCursorRoundTrip(t *testing.T) {
	info := &queue.TenantInfo{Tenant: "a:b", Active: 3, Pending: 4, Waiting: 1}
	for _, busiest := range []bool{false, true} {
		c := backend.NextTenantCursor(info, busiest)
		got, ok, err := backend.ParseTenantCursor(c, busiest)
		want := backend.TenantCursor{Tenant: "a:b"}
		if busiest {
			want = backend.TenantCursor{Busiest: true, Active: 3, Backlog: info.Backlog(), Tenant: "a:b"}
		}
		if err != nil || !ok || got != want {
			t.Errorf("busiest %v: Parse(%q) = %+v, %v, %v; want %+v", busiest, c, got, ok, err, want)
		}
	}
}

func TestTenantCursorBad(t *testing.T) {
	cases := []struct {
		cursor  string
		busiest bool
	}{
		{"b:1:2:x", false}, {"n:x", true}, {"b:1:x", true}, {"b:one:2:x", true}, {"x", false},
	}
	for _, tc := range cases {
		_, _, err := backend.ParseTenantCursor(tc.cursor, tc.busiest)
		var ia *queue.InvalidArgumentError
		if !errors.As(err, &ia) || ia.Field != "TenantFilter.Cursor" {
			t.Errorf("Parse(%q, busiest %v) = %v, want an invalid argument naming TenantFilter.Cursor", tc.cursor, tc.busiest, err)
		}
	}
	if _, ok, err := backend.ParseTenantCursor("", true); ok || err != nil {
		t.Errorf("Parse(\"\") = ok %v, %v; want the start", ok, err)
	}
}
