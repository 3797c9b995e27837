package redisqueue

import (
	"embed"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/queue"
)

// The scripts, one per transition. Each is lua/lib.lua, lua/sched.lua and
// lua/scope.lua (the tenant and group scheduler) followed by its own file;
// go-redis sends it by SHA-1 (EVALSHA) and falls back to EVAL when the
// server does not know it yet.
//
//go:embed lua/*.lua
var luaFiles embed.FS

var (
	scriptEnqueue  = loadScript("enqueue")
	scriptLease    = loadScript("lease")
	scriptExtend   = loadPlainScript("extend")
	scriptComplete = loadScript("complete")
	scriptFail     = loadScript("fail")
	scriptGiveBack = loadScript("giveback")
	scriptCancel   = loadScript("cancel")
	scriptRescue   = loadScript("rescue")
	scriptCleanup  = loadPlainScript("cleanup")
	scriptGet      = loadPlainScript("get")
	scriptList     = loadPlainScript("list")
	scriptStats    = loadPlainScript("stats")

	scriptSetTenant   = loadScript("settenant")
	scriptTenant      = loadPlainScript("tenant")
	scriptPause       = loadScript("pause")
	scriptCreateGroup = loadScript("creategroup")
	scriptGroup       = loadPlainScript("group")
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

// loadScript is lib.lua, sched.lua and scope.lua (the scheduler) and the
// script's own file.
func loadScript(name string) *redis.Script { return buildScript(name, "lib", "sched", "scope") }

// loadPlainScript is lib.lua and the script's own file, for scripts that
// move no job between states: every run pays for the code before its own.
func loadPlainScript(name string) *redis.Script { return buildScript(name, "lib") }

func buildScript(name string, libs ...string) *redis.Script {
	var src strings.Builder
	for _, f := range append(libs, name) {
		b, err := luaFiles.ReadFile("lua/" + f + ".lua")
		if err != nil {
			panic(err)
		}
		src.Write(b)
		src.WriteByte('\n')
	}
	return redis.NewScript(strings.NewReplacer(
		"__MAX_HISTORY__", strconv.Itoa(queue.MaxErrorHistory),
		"__MAX_ATTEMPTS__", strconv.Itoa(queue.DefaultMaxAttempts),
	).Replace(src.String()))
}

// Reply codes of the fenced scripts.
const (
	codeOK        = "ok"
	codeNotFound  = "nf"
	codeLeaseLost = "ll"
)
