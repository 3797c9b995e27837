package mux

import (
	"context"
	"sync"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// Lease leases from the backends of req.Queues, up to req.Max in all.
// Queues on one backend are one call to it. Over several backends, each
// call starts at the next backend in turn, so that a busy backend cannot
// starve the others, and asks each for what is still missing; order across
// backends is only that approximation. When a backend fails after others
// handed out leases, those leases are returned without the error (the
// jobs are safe in their leases); the failing backend's error comes back
// on a call where it is asked first.
func (m *Backend) Lease(ctx context.Context, req backend.LeaseRequest) ([]queue.Lease, error) {
	groups := m.split(req.Queues)
	if len(groups) == 1 {
		for i := range groups {
			return m.leaseFrom(ctx, m.routes[i], req)
		}
	}
	order := make([]int, 0, len(groups))
	for i := range m.routes {
		if _, ok := groups[i]; ok {
			order = append(order, i)
		}
	}
	start := int(m.turn.Add(1)) % len(order)
	var out []queue.Lease
	for k := range order {
		i := order[(start+k)%len(order)]
		sub := req
		sub.Queues, sub.Max = groups[i], req.Max-len(out)
		got, err := m.leaseFrom(ctx, m.routes[i], sub)
		if err != nil {
			if len(out) > 0 {
				return out, nil
			}
			return nil, err
		}
		out = append(out, got...)
		if len(out) >= req.Max {
			break
		}
	}
	return out, nil
}

func (m *Backend) leaseFrom(ctx context.Context, r route, req backend.LeaseRequest) ([]queue.Lease, error) {
	ls, err := r.b.Lease(ctx, req)
	if err != nil {
		return nil, r.wrap(err)
	}
	if r.prefix != "" {
		for k := range ls {
			ls[k].Job = r.outer(ls[k].Job)
		}
	}
	return ls, nil
}

// Subscribe implements backend.Notifier: the channel receives a value when
// any backend holding one of queues notifies. Backends that cannot notify
// are polled by workers as usual.
func (m *Backend) Subscribe(queues []string) (<-chan struct{}, func()) {
	var subs []backend.Notifier
	var qs [][]string
	for i, g := range m.split(queues) {
		if n := m.routes[i].b.Features().Notify; n != nil {
			subs, qs = append(subs, n), append(qs, g)
		}
	}
	if len(subs) == 1 {
		return subs[0].Subscribe(qs[0])
	}
	out := make(chan struct{}, 1)
	done := make(chan struct{})
	var wg sync.WaitGroup
	var stops []func()
	for k, n := range subs {
		ch, stop := n.Subscribe(qs[k])
		stops = append(stops, stop)
		wg.Add(1)
		go func() {
			defer wg.Done()
			forward(ch, out, done)
		}()
	}
	var once sync.Once
	return out, func() {
		once.Do(func() {
			close(done)
			for _, stop := range stops {
				stop()
			}
			wg.Wait()
		})
	}
}

// forward passes each value of in to out without blocking (out keeps one
// buffered, as a Notifier's channel does) until done is closed.
func forward(in <-chan struct{}, out chan<- struct{}, done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		case _, ok := <-in:
			if !ok {
				return
			}
			select {
			case out <- struct{}{}:
			default:
			}
		}
	}
}
