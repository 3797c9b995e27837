package queue

import "testing"

// granted reports whether ch has been granted its slot, taking the grant.
func granted(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestSlotQueueGrantsInOrder(t *testing.T) {
	q := newSlotQueue(1)
	a, b, c := q.enter(), q.enter(), q.enter()
	if got := []bool{granted(a), granted(b), granted(c)}; got[0] != true || got[1] || got[2] {
		t.Fatalf("grants with one slot: got %v, want [true false false]", got)
	}
	q.leave(b) // b withdraws while it waits: c is next
	q.release()
	if granted(b) || !granted(c) {
		t.Fatal("after a release: want c granted, b not")
	}
	d := q.enter()
	q.release()
	if !granted(d) {
		t.Fatal("the next release: want d granted")
	}
}

// A waiter that leaves after its grant arrived passes the slot on.
func TestSlotQueueLeaveAfterGrant(t *testing.T) {
	q := newSlotQueue(1)
	a := q.enter()
	b := q.enter()
	q.release() // a's slot, held since enter, goes to b
	if !granted(a) {
		t.Fatal("a: want its first grant")
	}
	q.leave(b) // b was granted but will not run
	c := q.enter()
	if !granted(c) {
		t.Fatal("c: want the slot b gave up")
	}
	if e := q.enter(); granted(e) {
		t.Fatal("e: granted a slot that is taken")
	}
}
