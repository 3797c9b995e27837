package sqlstore

import (
	"strconv"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// The fair-order rule (backend.FairTag and backend.FairOrder) as SQL text,
// for a dialect's set-based statements that tag many jobs at once: the
// expressions are built from the same constants as the Go rule, so the
// two cannot drift (a dialect's test checks them on a table of cases).
// Sched.Tag hands out the tags of jobs placed one by one in Go.

// FairUnitSQL is backend.FairUnit as SQL text: the tag a weight-1 job
// takes.
var FairUnitSQL = strconv.Itoa(backend.FairUnit)

// fairAgingCapSQL is queue.MaxAgingStep as SQL text.
var fairAgingCapSQL = strconv.Itoa(queue.MaxAgingStep)

// FairBandSQL is the band of backend.FairOrder for a job of priority prio
// in a queue of aging step aging (SQL expressions).
func FairBandSQL(aging, prio string) string {
	return `(CASE WHEN ` + aging + ` > 0 THEN 0 ELSE ` + prio + ` END)::bigint`
}

// FairRankSQL is the rank of backend.FairOrder for a job of priority prio
// and start tag start in a queue of aging step aging.
func FairRankSQL(start, aging, prio string) string {
	return `(CASE WHEN ` + aging + ` > 0 THEN ` + start + ` + ` + prio + `::bigint * least(` + aging + `, ` +
		fairAgingCapSQL + `)::bigint * ` + FairUnitSQL + ` ELSE ` + start + ` END)`
}

// FairTagsSQL are the values of (vstart, vfinish, band, vrank) of a
// weight-1 job of start tag start (backend.FairTag with the tenant's
// finish tag at start); NULL start: not ready yet, untagged.
func FairTagsSQL(start, aging, prio string) string {
	return start + `, ` + start + ` + ` + FairUnitSQL + `, ` + FairBandSQL(aging, prio) +
		`, coalesce(` + FairRankSQL(start, aging, prio) + `, 0)`
}
