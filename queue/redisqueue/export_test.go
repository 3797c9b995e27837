package redisqueue

// SetListBudget changes how many jobs List looks at per queue and call,
// so tests can reach the short-page path with few jobs. It returns a
// function that restores the old value.
func SetListBudget(n int) (restore func()) {
	old := listBudget
	listBudget = n
	return func() { listBudget = old }
}
