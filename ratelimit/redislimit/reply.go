package redislimit

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/ratelimit"
)

// replyWidth is how many integers decide.lua returns per request.
const replyWidth = 5

// Allowed flags of a decision that decide.lua voided because a key held
// something other than its counter.
const (
	flagForeignValue = -1 // this request's key
	flagVoided       = -2 // another request's key
)

// parseReply turns decide.lua's flat reply into a Decision, rejecting any
// reply that does not have the expected shape and ranges.
func parseReply(reply []int64, keys []string, reqs []ratelimit.Request) (ratelimit.Decision, error) {
	if len(reply) != replyWidth*len(reqs) {
		return ratelimit.Decision{}, fmt.Errorf("malformed reply: %d integers for %d requests, want %d",
			len(reply), len(reqs), replyWidth*len(reqs))
	}
	for i := range reqs {
		if reply[i*replyWidth] == flagForeignValue {
			return ratelimit.Decision{}, fmt.Errorf("malformed counter value at %q: the key holds something else; nothing was counted", keys[i])
		}
	}
	results := make([]ratelimit.Result, len(reqs))
	for i, r := range reqs {
		v := reply[i*replyWidth : (i+1)*replyWidth]
		res, err := parseResult(v, r)
		if err != nil {
			return ratelimit.Decision{}, fmt.Errorf("malformed reply for request %d: %w", i, err)
		}
		results[i] = res
	}
	return ratelimit.Decide(results), nil
}

func parseResult(v []int64, r ratelimit.Request) (ratelimit.Result, error) {
	allowed, used, remaining, reset, retry := v[0], v[1], v[2], v[3], v[4]
	switch {
	case allowed != 0 && allowed != 1:
		return ratelimit.Result{}, fmt.Errorf("allowed flag %d", allowed)
	case used < 0 || remaining < 0 || reset < 0:
		return ratelimit.Result{}, fmt.Errorf("negative count or reset (%d, %d, %d)", used, remaining, reset)
	case retry < 0 || allowed == 1 && retry != 0:
		return ratelimit.Result{}, fmt.Errorf("retry-after %d with allowed %d", retry, allowed)
	}
	res := ratelimit.Result{
		Limit:      r.Limit,
		Allowed:    allowed == 1,
		Used:       used,
		Remaining:  remaining,
		ResetAfter: time.Duration(reset) * time.Microsecond,
		RetryAfter: time.Duration(retry) * time.Microsecond,
	}
	return res, nil
}
