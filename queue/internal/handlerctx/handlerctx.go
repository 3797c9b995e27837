// Package handlerctx carries a running handler's lease in its context. The
// worker (package queue) puts it there; Job.ReportProgress, whose type lives
// in the leaf package queue/queuetype and so cannot see the worker, finds it
// here.
package handlerctx

import "context"

type key struct{}

// With returns ctx carrying lease, the value of the handler running in it.
func With(ctx context.Context, lease any) context.Context {
	return context.WithValue(ctx, key{}, lease)
}

// Value returns the lease ctx carries, or nil outside a handler.
func Value(ctx context.Context) any { return ctx.Value(key{}) }
