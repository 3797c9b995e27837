package pgqueue

import "github.com/sluicehq/sluice/queue"

// maxFlowSettle bounds the groups one step settles for cascades; rows
// past it wait for the next step that settles.
const maxFlowSettle = 1000

// qTakeFlowSettle takes the groups cascades touched: this transaction's
// own rows, and any a transition outside the store left behind (rows
// another step holds are skipped).
const qTakeFlowSettle = `DELETE FROM __schema__.flow_settle WHERE id IN (
	SELECT id FROM __schema__.flow_settle ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED) RETURNING grp`

// settleCascade completes, in the step's transaction, the groups whose
// jobs a parent's end cancelled (the trigger flow_settle lists them): a
// group whose last unfinished job went that way is done in the same step,
// as when its job ends by itself. Only a job that failed or was cancelled
// starts a cascade, so other transitions skip the look.
func (sc *sched) settleCascade(state queue.State) error {
	if state != queue.StateFailed && state != queue.StateCancelled {
		return nil
	}
	names, err := sc.Names(qTakeFlowSettle, maxFlowSettle)
	if err != nil {
		return err
	}
	var gs []string
	for _, g := range names {
		gs = addOnce(gs, g)
	}
	for _, g := range gs {
		if err := sc.GroupSettle(g); err != nil {
			return err
		}
	}
	return nil
}
