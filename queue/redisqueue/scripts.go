package redisqueue

import (
	"embed"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// The scripts, one per transition. A script that moves jobs is
// lua/events.lua (the outbox's append step), lua/lib.lua, lua/fair.lua (the
// fair order), lua/sched.lua and lua/scope.lua (the tenant and group
// scheduler), lua/flowlib.lua (flows), then its own file; a script that
// moves none is lib.lua and its own file. go-redis sends it
// by SHA-1 (EVALSHA) and falls back to EVAL when the server does not know
// it yet; on Redis 7 and later every script is also a function of one
// library loaded once (functions.go), which the backend calls instead.
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
	scriptCleanup  = loadScript("cleanup") // reads groups through the scheduler
	scriptGet      = loadPlainScript("get")
	scriptList     = loadPlainScript("list")
	scriptStats    = loadPlainScript("stats")
	scriptRetry    = loadScript("retry")
	scriptProgress = loadScript("progress")

	scriptSetTenant   = loadScript("settenant")
	scriptTenant      = loadPlainScript("tenant")
	scriptTenants     = loadPlainScript("tenants")
	scriptPause       = loadScript("pause")
	scriptCreateGroup = loadScript("creategroup")
	scriptGroup       = loadPlainScript("group")
	scriptCancelGroup = loadScript("cancelgroup")
	scriptCleanGroups = loadScript("cleangroups")

	scriptLeanEnqueue  = loadLeanScript("lean_enqueue", "fair")
	scriptLeanLease    = loadLeanScript("lean_lease")
	scriptLeanComplete = loadLeanScript("lean_complete")

	scriptEventClaim     = loadOutboxScript("event_claim")
	scriptEventDone      = loadOutboxScript("event_done")
	scriptDeliveryRecord = loadOutboxScript("delivery_record")
	scriptDeliveryList   = loadOutboxScript("delivery_list")
	scriptDeliveryPrune  = loadOutboxScript("delivery_prune")
)

// scriptRef is a script the backend runs.
type scriptRef = *redis.Script

var allScripts = []*redis.Script{
	scriptEnqueue, scriptLease, scriptExtend, scriptComplete, scriptFail, scriptGiveBack,
	scriptCancel, scriptRescue, scriptCleanup, scriptGet, scriptList, scriptStats, scriptRetry, scriptProgress,
	scriptSetTenant, scriptTenant, scriptTenants, scriptPause, scriptCreateGroup, scriptGroup, scriptCancelGroup,
	scriptCleanGroups, scriptLeanEnqueue, scriptLeanLease, scriptLeanComplete,
	scriptEventClaim, scriptEventDone, scriptDeliveryRecord, scriptDeliveryList, scriptDeliveryPrune,
}

// loadScript is a script that moves jobs: the outbox's append step, lib.lua,
// the scheduler and the script's own file. Any of them may end a job (a
// rescue, a tenant's MaxWait passing in a lease, a group's TTL, a group's
// completion), so each ends its arguments with the outbox's (see
// Backend.outboxArgs) and reads them first: a run that lacks them fails
// before its first write, since Redis does not undo a script's writes when
// it fails halfway.
func loadScript(name string) *redis.Script {
	s := buildScript(name, "outbox_args()\n", libShared...)
	movers[s] = true
	return s
}

// movers holds the scripts loadScript made; it is written only while the
// package initialises.
var movers = map[*redis.Script]bool{}

// loadOutboxScript is one of the outbox's own scripts: the append step's
// helpers, lib.lua and its own file.
func loadOutboxScript(name string) *redis.Script { return buildScript(name, "", "events", "lib") }

// loadPlainScript is lib.lua and the script's own file, for scripts that
// move no job between states: every run pays for the code before its own.
func loadPlainScript(name string) *redis.Script { return buildScript(name, "", "lib") }

// loadLeanScript is a script of the lean path (lean.go): lean_now.lua,
// the shared files it names (only fair.lua, the fair order's one
// definition, which makes one closure) and its own file, so a run builds
// nothing it does not use. As a function of the library it skips the
// reset of the shared code's state too, and finds those files in the
// library's shared code (libShared), built once when it loads.
func loadLeanScript(name string, shared ...string) *redis.Script {
	var src strings.Builder
	src.WriteString(luaFile("lean_now"))
	for _, f := range shared {
		src.WriteString(luaFile(f))
		src.WriteByte('\n')
	}
	src.WriteString(luaFile(name))
	s := redis.NewScript(luaConstants.Replace(src.String()))
	library.addLean(s, name, luaFile("lean_now")+luaFile(name))
	return s
}

func buildScript(name, prologue string, libs ...string) *redis.Script {
	var src strings.Builder
	for _, f := range libs {
		src.WriteString(luaFile(f))
		src.WriteByte('\n')
	}
	src.WriteString(prologue)
	src.WriteString(luaFile(name))
	s := redis.NewScript(luaConstants.Replace(src.String()))
	library.add(s, name, prologue)
	return s
}

// luaFile is the text of lua/<name>.lua.
func luaFile(name string) string {
	b, err := luaFiles.ReadFile("lua/" + name + ".lua")
	if err != nil {
		panic(err)
	}
	return string(b)
}

// luaConstants fills in the Go constants the scripts use.
var luaConstants = strings.NewReplacer(
	"__MAX_HISTORY__", strconv.Itoa(queue.MaxErrorHistory),
	"__MAX_ATTEMPTS__", strconv.Itoa(queue.DefaultMaxAttempts),
	"__FAIR_UNIT__", strconv.Itoa(backend.FairUnit),
	"__MAX_WEIGHT__", strconv.Itoa(queue.MaxWeight),
	"__MAX_AGING_STEP__", strconv.Itoa(queue.MaxAgingStep),
)

// Reply codes of the fenced scripts.
const (
	codeOK        = "ok"
	codeNotFound  = "nf"
	codeLeaseLost = "ll"
)
