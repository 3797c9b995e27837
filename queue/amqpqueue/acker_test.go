package amqpqueue

import (
	"fmt"
	"slices"
	"sync"
	"testing"
)

// settlements records what an instance sends, checking the broker's rule
// that a tag is settled once: a multiple ack covers every outstanding tag
// up to it, and settling a tag that is not outstanding is an error that
// would close the channel.
type settlements struct {
	mu          sync.Mutex
	outstanding map[uint64]bool
	log         []string
	err         error
}

func newSettlements(tags ...uint64) *settlements {
	s := &settlements{outstanding: map[uint64]bool{}}
	for _, t := range tags {
		s.outstanding[t] = true
	}
	return s
}

func (s *settlements) settle(kind string, tag uint64, multiple bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.outstanding[tag] && s.err == nil {
		s.err = fmt.Errorf("%s of tag %d, which is not outstanding", kind, tag)
	}
	delete(s.outstanding, tag)
	if multiple {
		for t := range s.outstanding {
			if t < tag {
				delete(s.outstanding, t)
			}
		}
	}
	s.log = append(s.log, fmt.Sprintf("%s %d%s", kind, tag, map[bool]string{true: "+", false: ""}[multiple]))
	return nil
}

func (s *settlements) Ack(tag uint64, multiple bool) error { return s.settle("ack", tag, multiple) }
func (s *settlements) Nack(tag uint64, multiple, requeue bool) error {
	return s.settle("nack", tag, multiple)
}

func TestAckCoalescing(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		// ops: "a3" acks tag 3, "n3" nacks it, "f" flushes (acks above the
		// lowest unsettled wait), "F" flushes all.
		ops     []string
		want    []string
		pending []uint64 // still outstanding at the end
	}{
		{"in order", []string{"a1", "a2", "a3", "f"}, []string{"ack 3+"}, []uint64{4, 5}},
		{"one", []string{"a1", "f"}, []string{"ack 1"}, []uint64{2, 3, 4, 5}},
		{"gap waits", []string{"a1", "a3", "f"}, []string{"ack 1"}, []uint64{2, 3, 4, 5}},
		{"gap closes", []string{"a1", "a3", "f", "a2", "f"}, []string{"ack 1", "ack 3+"}, []uint64{4, 5}},
		{"gap forced", []string{"a3", "a5", "F"}, []string{"ack 3", "ack 5"}, []uint64{1, 2, 4}},
		{"nack in the gap", []string{"a1", "n2", "a3", "f"}, []string{"nack 2", "ack 3+"}, []uint64{4, 5}},
		{"all", []string{"a5", "a4", "a2", "a1", "a3", "f"}, []string{"ack 5+"}, nil},
	}
	for _, c := range cases {
		s := newSettlements(1, 2, 3, 4, 5)
		in := newInstance(1, s)
		for tag := uint64(1); tag <= 5; tag++ {
			in.delivered(tag)
		}
		for _, op := range c.ops {
			var tag uint64
			fmt.Sscan(op[1:], &tag)
			switch op[0] {
			case 'a':
				_ = in.ack(tag)
			case 'n':
				_ = in.nack(tag)
			case 'f':
				in.flush(false)
			case 'F':
				in.flush(true)
			}
		}
		var left []uint64
		for t := range s.outstanding {
			left = append(left, t)
		}
		slices.Sort(left)
		if s.err != nil || !slices.Equal(s.log, c.want) || !slices.Equal(left, c.pending) {
			t.Errorf("%s: sent %v (err %v), outstanding %v; want %v, outstanding %v", c.name, s.log, s.err, left, c.want, c.pending)
		}
	}
}
