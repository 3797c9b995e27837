package pgqueue

import "time"

// SetLogPoll sets how often a blocked ReadEvents looks again without a
// notification, and returns the function that restores it.
func SetLogPoll(d time.Duration) (restore func()) {
	old := logPoll
	logPoll = d
	return func() { logPoll = old }
}

// ChannelName is the NOTIFY channel of a schema.
var ChannelName = channelName
