package dashboard

// ring keeps one value per second for the last len(slots) seconds. A slot
// remembers the second it holds, so a slot left over from an earlier lap
// reads as empty: nothing has to tick to clear old seconds.
type ring[T any] struct {
	secs  []int64
	slots []T
	reset func(*T)
}

func newRing[T any](n int, reset func(*T)) *ring[T] {
	r := &ring[T]{secs: make([]int64, n), slots: make([]T, n), reset: reset}
	for i := range r.secs {
		r.secs[i] = -1
	}
	return r
}

// at returns the slot of second sec, cleared when it held an older second.
func (r *ring[T]) at(sec int64) *T {
	i := int(mod(sec, int64(len(r.slots))))
	if r.secs[i] != sec {
		r.secs[i] = sec
		r.reset(&r.slots[i])
	}
	return &r.slots[i]
}

// get returns the slot of second sec, or nil when nothing was recorded in
// that second (or it is older than the ring).
func (r *ring[T]) get(sec int64) *T {
	i := int(mod(sec, int64(len(r.slots))))
	if r.secs[i] != sec {
		return nil
	}
	return &r.slots[i]
}

func mod(a, n int64) int64 {
	m := a % n
	if m < 0 {
		m += n
	}
	return m
}
