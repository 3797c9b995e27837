package queue_test

import (
	"errors"
	"testing"

	"github.com/sluicehq/sluice/queue"
)

func TestFieldPath(t *testing.T) {
	t.Parallel()
	cases := []struct {
		p    queue.FieldPath
		want string
	}{
		{queue.Field("JobSpec", "UniqueKey"), "JobSpec.UniqueKey"},
		{queue.Field("JobSpec", "Kind").At("specs", 3), "specs[3].JobSpec.Kind"},
		{queue.Field("", "tenant"), "tenant"},
	}
	for _, c := range cases {
		if got := c.p.String(); got != c.want {
			t.Errorf("%+v.String() = %q, want %q", c.p, got, c.want)
		}
	}
}

// TestBatchErrorsNameTheSpec checks that an invalid spec of a batch is
// named in parts: the batch, the index and the field, with the rule as it
// is.
func TestBatchErrorsNameTheSpec(t *testing.T) {
	t.Parallel()
	b, done := openExample()
	defer done()
	_, err := queue.NewClient(b).EnqueueBatch(t.Context(), []queue.JobSpec{
		{Queue: "q", Kind: "k"}, {Queue: "q", Kind: "k", UniqueFor: 1},
	})
	var ia *queue.InvalidArgumentError
	want := queue.Field("JobSpec", "UniqueFor").At("specs", 1)
	if !errors.As(err, &ia) || ia.Path != want || ia.Field != want.String() || ia.Rule != "is set without a unique key" {
		t.Fatalf("EnqueueBatch = %#v, want the path %+v and the rule alone", err, want)
	}
}

func TestPartialError(t *testing.T) {
	t.Parallel()
	cause := errors.New("connection refused")
	e := &queue.PartialError{Results: []queue.Enqueued{{Job: &queue.Job{ID: "1"}}, {}}, Route: "lane", Err: cause}
	if want := `queue: 1 of 2 jobs stored, then route "lane" failed: connection refused`; e.Error() != want {
		t.Errorf("Error() = %q, want %q", e.Error(), want)
	}
	if !errors.Is(e, cause) {
		t.Error("a PartialError does not unwrap to its backend's error")
	}
}
