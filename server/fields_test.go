package server

import (
	"reflect"
	"testing"

	"github.com/sluicehq/sluice/queue"
)

// TestAPIFieldNames checks the names the API gives the queue's fields: the
// JSON names of the bodies, and that every field of the types a body
// carries has one, so a field added to the queue without its place in the
// API is caught here.
func TestAPIFieldNames(t *testing.T) {
	t.Parallel()
	cases := []struct {
		p    queue.FieldPath
		want string
	}{
		{queue.Field("JobSpec", "UniqueKey"), "unique_key"},
		{queue.Field("JobSpec", "Timeout"), "timeout_ms"},
		{queue.Field("JobSpec", "Kind").At("specs", 2), "jobs[2].kind"},
		{queue.Field("GroupSpec", "MinInterval"), "min_interval_ms"},
		{queue.Field("TenantConfig", "MaxWait"), "max_wait_ms"},
		{queue.Field("ListFilter", "States"), "state"},
		{queue.Field("TenantFilter", "Cursor"), "cursor"},
		{queue.Field("", "tenant"), "tenant"},
		{queue.Field("", "specs"), "jobs"},
	}
	for _, c := range cases {
		if got := apiField(c.p); got != c.want {
			t.Errorf("apiField(%s) = %q, want %q", c.p, got, c.want)
		}
	}
	for _, typ := range []any{queue.JobSpec{}, queue.GroupSpec{}, queue.TenantConfig{}} {
		rt := reflect.TypeOf(typ)
		for i := 0; i < rt.NumField(); i++ {
			if _, ok := apiFields[[2]string{rt.Name(), rt.Field(i).Name}]; !ok {
				t.Errorf("%s.%s has no name in the API", rt.Name(), rt.Field(i).Name)
			}
		}
	}
}
