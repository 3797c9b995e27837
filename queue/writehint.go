package queue

import "context"

type backgroundWriteKey struct{}

// BackgroundWrite marks ctx as that of a write nobody is waiting on to go
// on with their work. A Worker records each job's outcome so: the job's
// slot is already free and the next job may have started. A backend may
// then hold the write for a moment to send it with other traffic (a
// lease, an enqueue, other outcomes) in one round trip or transaction; it
// must still land, or fail, as it would have. Without the mark, writes go
// out at once.
func BackgroundWrite(ctx context.Context) context.Context {
	return context.WithValue(ctx, backgroundWriteKey{}, true)
}

// IsBackgroundWrite reports whether ctx carries BackgroundWrite's mark.
func IsBackgroundWrite(ctx context.Context) bool {
	v, _ := ctx.Value(backgroundWriteKey{}).(bool)
	return v
}
