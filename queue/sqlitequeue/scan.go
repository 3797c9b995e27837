package sqlitequeue

import (
	"github.com/sluicehq/sluice/queue/sqlstore"
)

// jobCols lists the columns sqlstore.ScanJob reads, in order.
var jobCols = sqlstore.JobCols("")

type scanner = sqlstore.Row
