package redisqueue

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// A script sent with EVALSHA runs its whole text every time: the shared
// files before its own (events.lua, lib.lua, fair.lua, sched.lua, scope.lua,
// flowlib.lua) make their closures and tables on every run, whatever the
// run needs. On Redis 7 and later the backend instead loads every script
// once as a function of one library (FUNCTION LOAD) and calls it with
// FCALL: the shared code is built when the library loads, and each call
// only resets the few variables that hold one run's state (the time, the
// queue tables, the arguments read once).
//
// The library's name carries a hash of its text, so processes of
// different versions sharing a Redis each load and call their own. It is
// loaded on the first call that finds it missing (FCALL answers "Function
// not found": a new server, a restart without persistence, FUNCTION
// FLUSH). A server or test double without FCALL (older Redis, miniredis),
// one that refuses FUNCTION LOAD (ACLs), and Redis Cluster (functions
// would have to be loaded on every node) keep the EVALSHA path.

// luaLibrary gathers the scripts as buildScript makes them, while the
// package initialises, and builds the library's text on first use.
type luaLibrary struct {
	mu      sync.Mutex
	scripts []libScript
	built   bool
	name    string                   // the library's
	fnames  map[*redis.Script]string // each script's function
	src     string
}

type libScript struct {
	s              *redis.Script
	name, prologue string
	lean           bool   // takes KEYS and ARGV as its parameters, without reset
	text           string // a lean script's text
}

var library = &luaLibrary{}

// add records script s, built from its prologue and lua/<name>.lua.
func (l *luaLibrary) add(s *redis.Script, name, prologue string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.built {
		l.scripts = append(l.scripts, libScript{s: s, name: name, prologue: prologue})
	}
}

// addLean records lean script s, named name, of text, which uses none of
// the shared code.
func (l *luaLibrary) addLean(s *redis.Script, name, text string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.built {
		l.scripts = append(l.scripts, libScript{s: s, name: name, lean: true, text: text})
	}
}

// libShared are the files every function shares, in the scripts' order.
var libShared = []string{"events", "lib", "fair", "sched", "scope", "flowlib"}

// libReset starts each call: it gives the shared code this call's
// arguments and forgets what the previous call read or built.
const libReset = `
local function reset(keys, args)
  KEYS, ARGV = keys, args
  OUTBOX, LOG, EV, FL, SETTLING = nil, nil, nil, nil, nil
  NOW, SNOW = nil, nil
  QT, FOREIGN = {}, {}
  TIMED, WAKE_NEXT = false, nil
  P = args[2] or ''
  S = nil
end
`

// build makes the library's text and names once.
func (l *luaLibrary) build() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.built {
		return
	}
	l.built = true
	var body strings.Builder
	body.WriteString("local KEYS, ARGV\n")
	for _, f := range libShared {
		src := luaFile(f)
		if f == "sched" {
			// The prefix is an argument of each call (see libReset).
			src = strings.Replace(src, "local P = ARGV[2] or ''", "local P = ''", 1)
		}
		body.WriteString(src)
		body.WriteByte('\n')
	}
	body.WriteString(libReset)
	var fns strings.Builder
	for _, s := range l.scripts {
		if s.lean {
			fns.WriteString("redis.register_function('@@_" + s.name + "', function(KEYS, ARGV)\n")
		} else {
			fns.WriteString("redis.register_function('@@_" + s.name + "', function(keys, args)\nreset(keys, args)\n")
		}
		fns.WriteString(s.prologue)
		if s.lean {
			fns.WriteString(s.text)
		} else {
			fns.WriteString(luaFile(s.name))
		}
		fns.WriteString("\nend)\n")
	}
	text := luaConstants.Replace(body.String() + fns.String())
	sum := sha1.Sum([]byte(text))
	l.name = "sluice_" + hex.EncodeToString(sum[:6])
	l.fnames = make(map[*redis.Script]string, len(l.scripts))
	for _, s := range l.scripts {
		l.fnames[s.s] = l.name + "_" + s.name
	}
	l.src = "#!lua name=" + l.name + "\n" + strings.ReplaceAll(text, "'@@_", "'"+l.name+"_")
}

// function returns the name of script s's function.
func (l *luaLibrary) function(s *redis.Script) (string, bool) {
	l.build()
	n, ok := l.fnames[s]
	return n, ok
}

// Modes of a runner.
const (
	fnTry int32 = iota // call functions; load the library when missing
	fnOff              // EVALSHA only
)

// runner runs scripts as functions while the server takes them, else
// with EVALSHA.
type runner struct {
	client redis.UniversalClient
	log    *slog.Logger
	mode   atomic.Int32
	loadMu sync.Mutex
}

func newRunner(c redis.UniversalClient, log *slog.Logger, cluster bool) *runner {
	r := &runner{client: c, log: log}
	if cluster {
		r.mode.Store(fnOff)
	}
	return r
}

// run runs script s on the client.
func (r *runner) run(ctx context.Context, s *redis.Script, keys []string, args []any) (any, error) {
	name, ok := library.function(s)
	if !ok || r.mode.Load() == fnOff {
		return s.Run(ctx, r.client, keys, args...).Result()
	}
	res, err := r.client.FCall(ctx, name, keys, args...).Result()
	if err == nil {
		return res, nil
	}
	return r.again(ctx, s, keys, args, err)
}

// queue adds script s to pipeline p.
func (r *runner) queue(ctx context.Context, p redis.Pipeliner, s *redis.Script, keys []string, args []any) *redis.Cmd {
	if name, ok := library.function(s); ok && r.mode.Load() != fnOff {
		return p.FCall(ctx, name, keys, args...)
	}
	return s.EvalSha(ctx, p, keys, args...)
}

// again runs s once more after err, when err says the server lacks the
// script, the library or FCALL, and returns err otherwise. Only errors
// the server gives before running anything are taken: a script that
// failed halfway must not run twice.
func (r *runner) again(ctx context.Context, s *redis.Script, keys []string, args []any, err error) (any, error) {
	msg := err.Error()
	noFCall := strings.Contains(strings.ToLower(msg), "fcall") &&
		(strings.HasPrefix(msg, "ERR unknown command") || strings.HasPrefix(msg, "NOPERM"))
	switch {
	case strings.HasPrefix(msg, "NOSCRIPT"):
		return s.Run(ctx, r.client, keys, args...).Result()
	case noFCall:
		r.off("the server does not take FCALL", err)
		return s.Run(ctx, r.client, keys, args...).Result()
	case !strings.Contains(msg, "Function not found"):
		return nil, err
	}
	if err := r.load(ctx); err != nil {
		return nil, err
	}
	name, _ := library.function(s)
	if r.mode.Load() == fnOff {
		return s.Run(ctx, r.client, keys, args...).Result()
	}
	return r.client.FCall(ctx, name, keys, args...).Result()
}

// load loads the library. A server that refuses it (an ACL, an old
// Lua) turns functions off; a fault on the way is returned.
func (r *runner) load(ctx context.Context) error {
	r.loadMu.Lock()
	defer r.loadMu.Unlock()
	library.build()
	err := r.client.FunctionLoad(ctx, library.src).Err()
	var refused redis.Error
	switch {
	case err == nil || strings.Contains(err.Error(), "already exists"):
		return nil
	case errors.As(err, &refused):
		r.off("loading the function library failed", err)
		return nil
	}
	return err
}

// ready loads the library unless functions are off. A server without
// FUNCTION (older Redis, miniredis) turns them off.
func (r *runner) ready(ctx context.Context) error {
	if r.mode.Load() == fnOff {
		return nil
	}
	return r.load(ctx)
}

func (r *runner) off(why string, err error) {
	if r.mode.Swap(fnOff) != fnOff {
		r.log.Info("redisqueue: running scripts with EVALSHA: "+why, "err", err)
	}
}
