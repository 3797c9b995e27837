-- Flows (queue.FlowBackend): jobs that wait for others. Shared by every
-- script that moves jobs, after sched.lua and scope.lua; like scope.lua it
-- is one function, flows, whose first call in a script builds the part.
--
-- Keys, all derived from job keys (so flows need the scheduler's
-- non-Cluster Redis, P not empty):
--   <job key>:ch     set of the job keys of its children
--   <job key>:pa     list of the job keys of its parents, in order
--   P..'flow:'..esc(id)        hash: n name, ca created
--   P..'flow:'..esc(id)..':jobs'  list of the flow's job keys, in order
--   <queue base>blocked        sorted set of the queue's blocked jobs,
--                              score 0, member the sequence
-- Job fields: dp the parents' ids (comma-separated), fl flow id, fn node
-- name, opf 'run' (OnParentFailure), dl parents not yet ended, cb the key
-- of the parent whose end cancelled it, ch '1' when it has children.
--
-- A job that ends (finish, complete.lua) with ch set settles its blocked
-- children in the same script (flow_hook): on failure or cancellation
-- those that do not run anyway are cancelled through finish, which
-- settles theirs in turn; the rest count one parent fewer, and one with
-- none left becomes ready through sched.lua's ready, as any job does.

local FL

local function flows()
  if FL then
    return FL
  end
  local F = {}
  FL = F

  -- blocked names the blocked index of queue table q.
  function F.blocked(q)
    return string.sub(q.jp, 1, -5) .. 'blocked'
  end

  -- gone forgets deleted job jk in flow id's job list, and deletes the
  -- flow's record with its last job: the flow has nothing more to show.
  function F.gone(jk, id)
    local fk = P .. 'flow:' .. esc(id)
    redis.call('LREM', fk .. ':jobs', 1, jk)
    if redis.call('LLEN', fk .. ':jobs') == 0 then
      redis.call('DEL', fk)
    end
  end

  -- idof returns the id of the job with key jk (keys.go's id).
  function F.idof(jk)
    local tag = string.match(jk, '{([^{}]*)}:job:%d+$')
    return string.sub(jk, -16) .. '-' .. id_part(tag)
  end

  function F.reason(pjk, st)
    if st == 'failed' then
      return 'parent job ' .. F.idof(pjk) .. ' failed'
    end
    return 'parent job ' .. F.idof(pjk) .. ' was cancelled'
  end

  -- release makes blocked job J ready: scheduled when its run-at is ahead,
  -- else pending or waiting by ready.
  function F.release(J)
    redis.call('ZREM', F.blocked(J.q), J.seq)
    local ra = num(redis.call('HGET', J.jk, 'ra'))
    if ra > NOW then
      redis.call('HSET', J.jk, 'st', 'scheduled', 'ua', SNOW)
      redis.call('ZADD', J.q.scheduled, n2s(ra), J.seq)
      timed()
      move(J, 'blocked', 'scheduled')
      return
    end
    local h = {'ra', SNOW, 'ua', SNOW}
    ready(J, 'blocked', h)
    redis.call('HSET', J.jk, unpack(h))
  end

  -- settle: parent pjk ended in state st.
  function F.settle(pjk, st)
    for _, ck in ipairs(redis.call('SMEMBERS', pjk .. ':ch')) do
      local v = redis.call('HMGET', ck, 'st', 'opf')
      if v[1] == 'blocked' then
        local J = scoped().load(ck)
        if st ~= 'completed' and v[2] ~= 'run' then
          redis.call('ZREM', F.blocked(J.q), J.seq)
          finish(J.q, ck, J.seq, 'cancelled', SNOW, J.ukk, J.uf, {'le', F.reason(pjk, st), 'cb', pjk}, J, 'blocked')
        elseif redis.call('HINCRBY', ck, 'dl', -1) <= 0 then
          F.release(J)
        end
      end
    end
  end

  -- open counts the parents of ck that have not ended (or, unless it runs
  -- anyway, not completed).
  function F.open(ck, run)
    local n = 0
    for _, pk in ipairs(redis.call('LRANGE', ck .. ':pa', 0, -1)) do
      local st = redis.call('HGET', pk, 'st')
      if st and st ~= 'completed' and not (run and final(st)) then
        n = n + 1
      end
    end
    return n
  end

  -- group_open says whether group g still takes jobs back: it exists
  -- and has neither ended nor been cancelled.
  local function group_open(g)
    local grp = scoped().group(g)
    return grp and not grp.cr and grp.da == 0
  end

  -- reopen: parent root was retried by hand. The children it cancelled go
  -- back to blocked, and theirs in turn; then the blocked children of all
  -- of them count their parents again. A child of a group comes back only
  -- while its group is open: once the group ended, its completion counted
  -- the child cancelled, and a group's jobs are never retried.
  function F.reopen(root)
    -- Generation by generation, not nested: a chain of any depth reopens
    -- in one script without deepening the Lua stack.
    local todo, i = {root}, 1
    while todo[i] do
      local pjk = todo[i]
      i = i + 1
      for _, ck in ipairs(redis.call('SMEMBERS', pjk .. ':ch')) do
        local v = redis.call('HMGET', ck, 'st', 'cb', 'g', 'opf')
        if v[1] == 'cancelled' and v[2] == pjk and (not v[3] or group_open(v[3])) then
          local J = scoped().load(ck)
          redis.call('ZREM', J.q.cancelled, J.seq)
          redis.call('HDEL', ck, 'fa', 'cb', 'le')
          redis.call('HSET', ck, 'st', 'blocked', 'ua', SNOW)
          redis.call('ZADD', F.blocked(J.q), 0, J.seq)
          move(J, 'cancelled', 'blocked')
          if J.g then
            redis.call('SADD', scoped().gkey(J.g) .. ':open', ck)
          end
          todo[#todo + 1] = ck
        end
      end
    end
    -- Then every blocked child of a job reopened here counts its parents
    -- afresh: counting once all are reopened, rather than adding one per
    -- parent as it reopens, counts a child of two reopened parents once
    -- per parent.
    for _, pjk in ipairs(todo) do
      for _, ck in ipairs(redis.call('SMEMBERS', pjk .. ':ch')) do
        local v = redis.call('HMGET', ck, 'st', 'opf')
        if v[1] == 'blocked' then
          redis.call('HSET', ck, 'dl', n2s(F.open(ck, v[2] == 'run')))
        end
      end
    end
  end

  return F
end

-- flow_hook settles the children of jobs that ended, generation by
-- generation: a child that a settle cancels ends in turn, and its own
-- settle waits in the list instead of nesting inside its parent's, so a
-- chain of any depth settles in one script without deepening the Lua
-- stack (a test double's Lua stops a few hundred calls deep). SETTLING
-- is one run's state: a function call starts with it reset (functions.go).
local SETTLING
flow_hook = function(jk, st)
  if P == '' then
    return
  end
  if SETTLING then
    SETTLING[#SETTLING + 1] = {jk, st}
    return
  end
  SETTLING = {{jk, st}}
  local i = 1
  while SETTLING[i] do
    flows().settle(SETTLING[i][1], SETTLING[i][2])
    i = i + 1
  end
  SETTLING = nil
end
