package redisqueue

import (
	"embed"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/queue"
)

// The scripts, one per transition. Each is lua/events.lua (the outbox's
// append step), lua/lib.lua and its own file; go-redis sends it by SHA-1
// (EVALSHA) and falls back to EVAL when the server does not know it yet.
//
//go:embed lua/*.lua
var luaFiles embed.FS

var (
	scriptEnqueue  = loadScript("enqueue")
	scriptLease    = loadScript("lease")
	scriptExtend   = loadScript("extend")
	scriptComplete = loadScript("complete")
	scriptFail     = loadScript("fail")
	scriptGiveBack = loadScript("giveback")
	scriptCancel   = loadScript("cancel")
	scriptRescue   = loadScript("rescue")
	scriptCleanup  = loadScript("cleanup")
	scriptGet      = loadScript("get")
	scriptList     = loadScript("list")
	scriptStats    = loadScript("stats")
	scriptRetry    = loadScript("retry")

	scriptEventClaim     = loadScript("event_claim")
	scriptEventDone      = loadScript("event_done")
	scriptDeliveryRecord = loadScript("delivery_record")
	scriptDeliveryList   = loadScript("delivery_list")
	scriptDeliveryPrune  = loadScript("delivery_prune")
)

// scriptRef is a script the backend runs.
type scriptRef = *redis.Script

var allScripts = []*redis.Script{
	scriptEnqueue, scriptLease, scriptExtend, scriptComplete, scriptFail, scriptGiveBack,
	scriptCancel, scriptRescue, scriptCleanup, scriptGet, scriptList, scriptStats, scriptRetry,
	scriptEventClaim, scriptEventDone, scriptDeliveryRecord, scriptDeliveryList, scriptDeliveryPrune,
}

func loadScript(name string) *redis.Script {
	events, err := luaFiles.ReadFile("lua/events.lua")
	if err != nil {
		panic(err)
	}
	lib, err := luaFiles.ReadFile("lua/lib.lua")
	if err != nil {
		panic(err)
	}
	own, err := luaFiles.ReadFile("lua/" + name + ".lua")
	if err != nil {
		panic(err)
	}
	lib = []byte(strings.ReplaceAll(string(lib), "__MAX_HISTORY__", strconv.Itoa(queue.MaxErrorHistory)))
	src := string(events) + "\n" + string(lib) + "\n"
	if endsJobs[name] {
		// Reading the outbox's arguments first makes a run that lacks them
		// fail before its first write: Redis does not undo a script's
		// writes when it fails halfway.
		src += "outbox_args()\n"
	}
	return redis.NewScript(src + string(own))
}

// endsJobs names the scripts that may move a job to a final state, and so
// end their arguments with the outbox's (see Backend.outboxArgs).
var endsJobs = map[string]bool{"complete": true, "fail": true, "giveback": true, "cancel": true, "rescue": true}

// Reply codes of the fenced scripts.
const (
	codeOK        = "ok"
	codeNotFound  = "nf"
	codeLeaseLost = "ll"
)
