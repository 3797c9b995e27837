package redislimit

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed acquire.lua
	acquireSource string
	//go:embed atmost.lua
	atMostSource string
	//go:embed reserve.lua
	reserveSource string
	//go:embed release.lua
	releaseSource string
	//go:embed refund.lua
	refundSource string
	//go:embed reset.lua
	resetSource string
)

// withDecide prefixes an operation's script with decide.lua wrapped as a
// local function decide(KEYS, ARGV): the operations judge windows by the
// very code Consume runs, so the algorithms are written once.
func withDecide(src string) *redis.Script {
	return redis.NewScript("local function decide(KEYS, ARGV)\n" + decideSource + "\nend\n" + src)
}

var (
	acquireScript = withDecide(acquireSource)
	atMostScript  = withDecide(atMostSource)
	reserveScript = withDecide(reserveSource)
	releaseScript = redis.NewScript(releaseSource)
	refundScript  = redis.NewScript(refundSource)
	resetScript   = redis.NewScript(resetSource)
)

var (
	//go:embed admit.lua
	admitSource string
	//go:embed charge.lua
	chargeSource string
	//go:embed gate.lua
	gateSource string

	admitScript  = withDecide(admitSource)
	chargeScript = withDecide(chargeSource)
	gateScript   = redis.NewScript(gateSource)
)
