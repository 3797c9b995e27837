package backend

import "github.com/sluicehq/sluice/queue/queuetype"

// FairUnit is the virtual time one job of a weight-1 tenant takes in the
// fair order of queuetype.TenantBackend; a tenant of weight w advances by
// FairUnit/w per job. FairUnit × queuetype.MaxPriority × queuetype.MaxAgingStep
// stays below 2^53, so every key is exact as a float64 (a Redis sorted-set
// score).
const FairUnit = 1000

// FairTag returns the start tag of a job that becomes ready in a queue of
// virtual time vtime, for a tenant of finish tag finish and weight weight,
// and the tenant's new finish tag. A weight outside 1..queuetype.MaxWeight
// counts as the nearest bound.
func FairTag(vtime, finish int64, weight int) (start, next int64) {
	weight = min(max(weight, 1), queuetype.MaxWeight)
	start = max(vtime, finish)
	return start, start + FairUnit/int64(weight)
}

// FairOrder returns the sort key (band, rank) of a ready job of the given
// priority and start tag in a queue with aging step aging: ready jobs are
// taken by band, then rank, then sequence. Without aging (aging <= 0) the
// band is the priority and the rank the start tag; with aging every job is
// in band 0 and its priority adds aging rounds to its rank.
func FairOrder(start int64, priority, aging int) (band, rank int64) {
	if aging <= 0 {
		return int64(priority), start
	}
	return 0, start + int64(priority)*int64(min(aging, queuetype.MaxAgingStep))*FairUnit
}
