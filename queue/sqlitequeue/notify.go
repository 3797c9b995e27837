package sqlitequeue

// Subscribe implements queue.Notifier. Notifications come from this
// process only; workers in other processes sharing the file find new jobs
// by polling.
func (b *Backend) Subscribe(queues []string) (<-chan struct{}, func()) { return b.subs.Add(queues) }

// notify wakes the subscribers of queue q without blocking.
func (b *Backend) notify(q string) { b.subs.Wake(q) }
