package redisqueue

import (
	"embed"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/queue"
)

// The scripts, one per transition. Each is lua/lib.lua followed by its own
// file; go-redis sends it by SHA-1 (EVALSHA) and falls back to EVAL when
// the server does not know it yet.
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
)

// scriptRef is a script the backend runs.
type scriptRef = *redis.Script

var allScripts = []*redis.Script{
	scriptEnqueue, scriptLease, scriptExtend, scriptComplete, scriptFail, scriptGiveBack,
	scriptCancel, scriptRescue, scriptCleanup, scriptGet, scriptList, scriptStats, scriptRetry,
}

func loadScript(name string) *redis.Script {
	lib, err := luaFiles.ReadFile("lua/lib.lua")
	if err != nil {
		panic(err)
	}
	own, err := luaFiles.ReadFile("lua/" + name + ".lua")
	if err != nil {
		panic(err)
	}
	src := strings.ReplaceAll(string(lib), "__MAX_HISTORY__", strconv.Itoa(queue.MaxErrorHistory))
	return redis.NewScript(src + "\n" + string(own))
}

// Reply codes of the fenced scripts.
const (
	codeOK        = "ok"
	codeNotFound  = "nf"
	codeLeaseLost = "ll"
)
