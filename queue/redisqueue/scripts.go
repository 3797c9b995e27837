package redisqueue

import (
	"embed"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/queue"
)

// The scripts, one per transition. Each is lua/lib.lua and lua/sched.lua
// (the tenant and group scheduler) followed by its own file; go-redis sends it by SHA-1 (EVALSHA) and falls back to EVAL when
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

	scriptSetTenant   = loadScript("settenant")
	scriptTenant      = loadScript("tenant")
	scriptPause       = loadScript("pause")
	scriptCreateGroup = loadScript("creategroup")
	scriptGroup       = loadScript("group")
	scriptCancelGroup = loadScript("cancelgroup")
	scriptCleanGroups = loadScript("cleangroups")
)

// scriptRef is a script the backend runs.
type scriptRef = *redis.Script

var allScripts = []*redis.Script{
	scriptEnqueue, scriptLease, scriptExtend, scriptComplete, scriptFail, scriptGiveBack,
	scriptCancel, scriptRescue, scriptCleanup, scriptGet, scriptList, scriptStats,
	scriptSetTenant, scriptTenant, scriptPause, scriptCreateGroup, scriptGroup, scriptCancelGroup,
	scriptCleanGroups,
}

func loadScript(name string) *redis.Script {
	lib, err := luaFiles.ReadFile("lua/lib.lua")
	if err != nil {
		panic(err)
	}
	sched, err := luaFiles.ReadFile("lua/sched.lua")
	if err != nil {
		panic(err)
	}
	own, err := luaFiles.ReadFile("lua/" + name + ".lua")
	if err != nil {
		panic(err)
	}
	src := strings.NewReplacer(
		"__MAX_HISTORY__", strconv.Itoa(queue.MaxErrorHistory),
		"__MAX_ATTEMPTS__", strconv.Itoa(queue.DefaultMaxAttempts),
	).Replace(string(lib) + "\n" + string(sched))
	return redis.NewScript(src + "\n" + string(own))
}

// Reply codes of the fenced scripts.
const (
	codeOK        = "ok"
	codeNotFound  = "nf"
	codeLeaseLost = "ll"
)
