-- The tenant and group part of the scheduler (see sched.lua): every
-- function that only jobs with a tenant or group need. It is one
-- function, scoped, whose first call in a script builds the part and
-- returns it as the table S; a script that meets no such job never pays
-- for its closures.

-- scoped builds the tenant and group part once per script.
scoped = function()
  if S then
    return S
  end
  -- Every function and variable of the part is a field of X: a closure
  -- that captures one table is much cheaper to make than one that
  -- captures many locals, and the part is made once per script.
  local X = {}
  X.SP = P .. 'sched:'
  X.WAKE, X.TW, X.DONE = X.SP .. 'wake', X.SP .. 'tw', X.SP .. 'done'
  X.MAX_RELEASE, X.FILL_SCAN = 1000, 64
  X.ADMITTED = {pending = true, active = true}
  X.FILL_T, X.FILL_G, X.DONE_G = {}, {}, {}
  -- REG is the tenant registry (queue.TenantLister): a sorted set, every
  -- score 0 so it orders by name, of the tenants with unfinished jobs or
  -- settings of their own. EMPTY_T holds the tenants whose count of some
  -- state fell to zero in this script: settle drops those left with no
  -- jobs and no settings.
  X.REG, X.EMPTY_T = X.SP .. 'tenants', {}

  -- TK and GK map tenant and group names to their hashes' keys: the keys
  -- of the names a script was called with, which keys.go built (known),
  -- and those tkey and gkey escaped here for names found while it runs
  -- (in jobs, groups, sets), each escaped once per script.
  X.TK, X.GK = {}, {}

  function X.tkey(name)
    local k = X.TK[name]
    if not k then
      k = X.SP .. 't:' .. esc(name)
      X.TK[name] = k
    end
    return k
  end

  function X.gkey(id)
    local k = X.GK[id]
    if not k then
      k = X.SP .. 'g:' .. esc(id)
      X.GK[id] = k
    end
    return k
  end

  -- known records the keys Go built for tenant tn and group g of a job
  -- the script was called with ('' for none).
  function X.known(tn, tk, g, gk)
    if tn ~= '' then X.TK[tn] = tk end
    if g ~= '' then X.GK[g] = gk end
  end

  -- qbase returns the queue table of the queue whose keys start with base
  -- ('<P>queue:{<name>}:'), the script's own when it has one.
  function X.qbase(base)
    local jp = base .. 'job:'
    local q = QT[jp]
    if q then
      return q
    end
    q = {jp = jp, ch = base .. 'ready', wake = false}
    for _, n in ipairs(NAMES) do
      q[n] = base .. n
    end
    q.blocked = base .. 'blocked'
    QT[jp] = q
    FOREIGN[#FOREIGN + 1] = q
    return q
  end

  -- The job key is the queue's base, 'job:' and the 16-digit sequence.
  function X.qof(jk) return X.qbase(string.sub(jk, 1, #jk - 20)) end

  -- load reads a job of any queue by its key; nil when it is gone.
  function X.load(jk)
    local v = redis.call('HMGET', jk, 'st', 'tn', 'g', 'pr', 'vo', 'vb', 'ukk', 'uf', 'at')
    if not v[1] then
      return nil
    end
    local J = mkjob(X.qof(jk), string.sub(jk, -16), v[2], v[3], v[4], v[5], v[6])
    J.st, J.ukk, J.uf, J.at = v[1], v[7], v[8], num(v[9])
    return J
  end

  function X.wake_at(m, at)
    local cur = redis.call('ZSCORE', X.WAKE, m)
    if not cur or tonumber(cur) > at then
      redis.call('ZADD', X.WAKE, string.format('%.0f', at), m)
      timed()
    end
  end

  -- Settings, read once per script.
  X.TC, X.GC = {}, {}

  function X.forget()
    X.DEF, X.TC, X.GC = nil, {}, {}
  end

  -- tenant returns a tenant's effective settings (queue.TenantConfig.Effective).
  function X.tenant(name)
    local t = X.TC[name]
    if t then
      return t
    end
    if not X.DEF then
      local d = redis.call('HMGET', X.SP .. 'defaults', 'l', 'w', 'b', 'mw')
      X.DEF = {num(d[1]), num(d[2]), num(d[3]), num(d[4])}
    end
    local k = X.tkey(name)
    local o = redis.call('HMGET', k, 'l', 'w', 'b', 'mw', 'pu')
    local function pick(i, builtin)
      local v = num(o[i])
      if v ~= 0 then return v end
      if X.DEF[i] ~= 0 then return X.DEF[i] end
      return builtin
    end
    t = {k = k, name = name, l = pick(1, -1), w = pick(2, 1), mw = pick(4, 0), pu = num(o[5])}
    local backlog = 2000000
    if t.l > 0 then
      backlog = math.min(math.max(t.l * 2000, 50000), 2000000)
    end
    t.b = pick(3, backlog)
    X.TC[name] = t
    return t
  end

  -- group returns a group's settings, or nil when it does not exist.
  function X.group(id)
    local g = X.GC[id]
    if g == nil then
      local k = X.gkey(id)
      local v = redis.call('HMGET', k, 'ca', 'mc', 'mi', 'ls', 'pu', 'cr', 'da')
      g = false
      if v[1] then
        g = {k = k, id = id, mc = num(v[2]), mi = num(v[3]), ls = num(v[4]), pu = num(v[5]),
          cr = v[6] == '1', da = num(v[7])}
      end
      X.GC[id] = g
    end
    return g or nil
  end

  -- blocked_until is when the group may start a job again: the end of a
  -- pause, or its last start plus its interval.
  function X.blocked_until(g)
    local u = g.pu
    if g.mi > 0 and g.ls > 0 then
      u = math.max(u, g.ls + g.mi)
    end
    return u
  end

  function X.counts(k, ...)
    local v = redis.call('HMGET', k, ...)
    for i = 1, #v do
      v[i] = num(v[i])
    end
    return v
  end

  -- leave and enter keep a scope's counts and sets: kind 't' or 'g', k the
  -- scope's key. A tenant counts only unfinished jobs.
  function X.leave(kind, k, name, J, from)
    if kind == 't' and final(from) then
      return
    end
    local n = redis.call('HINCRBY', k, 'n:' .. from, -1)
    if QUEUED[from] then
      redis.call('ZREM', k .. ':' .. from, J.vo .. J.jk)
    end
    if from == 'waiting' and kind == 't' then
      redis.call('ZREM', X.WAKE, 'j:' .. J.jk)
      if n <= 0 then
        redis.call('SREM', X.TW, name)
      end
    end
    if n <= 0 and kind == 't' then
      X.EMPTY_T[name] = true
    end
  end

  function X.enter(kind, k, name, J, to)
    if kind == 't' and final(to) then
      return
    end
    local n = redis.call('HINCRBY', k, 'n:' .. to, 1)
    if QUEUED[to] then
      redis.call('ZADD', k .. ':' .. to, J.vb, J.vo .. J.jk)
    end
    -- A tenant with no unfinished jobs gains one only by some count
    -- going from 0 to 1: only then may it be missing from the registry.
    if n == 1 and kind == 't' then
      redis.call('ZADD', X.REG, 0, name)
    end
    if to == 'waiting' and kind == 't' then
      if n == 1 then
        redis.call('SADD', X.TW, name)
      end
      local mw = X.tenant(name).mw
      if mw > 0 then
        redis.call('ZADD', X.WAKE, n2s(NOW + mw), 'j:' .. J.jk)
        timed()
      end
    end
  end

  -- move is the scope side of a job's move from state from to state to
  -- (either nil: the job is new, or only leaves for now). A job leaving the
  -- admitted states (pending, active) leaves room: its scopes are filled
  -- before the script ends; a job reaching a final state may complete its
  -- group.
  function X.move(J, from, to)
    if J.tn then
      local k = X.tkey(J.tn)
      if from then X.leave('t', k, J.tn, J, from) end
      if to then X.enter('t', k, J.tn, J, to) end
    end
    if J.g then
      local k = X.gkey(J.g)
      if from then X.leave('g', k, J.g, J, from) end
      if to then X.enter('g', k, J.g, J, to) end
      if to and final(to) then
        redis.call('SREM', k .. ':open', J.jk)
        X.owe(X.DONE_G, J.g)
      end
    end
    if from and X.ADMITTED[from] and not (to and X.ADMITTED[to]) then
      if J.tn then X.owe(X.FILL_T, J.tn) end
      if J.g then X.owe(X.FILL_G, J.g) end
    end
  end

  -- tenant_room and group_room say whether the scope may admit one more
  -- pending job (the job asking does not count itself: it has left its
  -- state already).
  function X.tenant_room(name)
    local t = X.tenant(name)
    if t.pu > NOW then
      X.wake_at('t:' .. name, t.pu)
      return false
    end
    if t.l < 0 then
      return true
    end
    local c = X.counts(t.k, 'n:pending', 'n:active')
    return c[1] + c[2] < t.l
  end

  function X.group_room(id)
    local g = X.group(id)
    if not g then
      return true -- deleted after it was done: no limits left
    end
    local c = X.counts(g.k, 'n:pending', 'n:active')
    if g.mi > 0 and c[1] > 0 then
      return false -- the next start is taken; the start wakes the group
    end
    local u = X.blocked_until(g)
    if u > NOW then
      X.wake_at('g:' .. id, u)
      return false
    end
    return g.mc == 0 or c[1] + c[2] < g.mc
  end

  -- place is ready for a job with a tenant or group, after its tag: it
  -- leaves its state from, and goes pending, or waiting when its tenant or
  -- group has no room.
  function X.place(J, from, h)
    X.move(J, from, nil)
    local st = 'pending'
    if (J.tn and not X.tenant_room(J.tn)) or (J.g and not X.group_room(J.g)) then
      st = 'waiting'
    end
    local m = J.vo .. J.seq
    if st == 'waiting' then
      redis.call('ZADD', J.q.waiting, J.vb, m)
    else
      pend(J.q, m, J.vb)
    end
    X.move(J, nil, st)
    h[#h + 1] = 'st'
    h[#h + 1] = st
    return st
  end

  -- hold moves a pending job to waiting (its scope has no room after all).
  function X.hold(J)
    local m = J.vo .. J.seq
    redis.call('ZREM', J.q.pending, m)
    redis.call('ZADD', J.q.waiting, J.vb, m)
    redis.call('HSET', J.jk, 'st', 'waiting', 'ua', SNOW)
    X.move(J, 'pending', 'waiting')
  end

  -- unwait moves a waiting job to pending.
  function X.unwait(J)
    local m = J.vo .. J.seq
    redis.call('ZREM', J.q.waiting, m)
    add_pending(J.q, m, J.vb)
    redis.call('HSET', J.jk, 'st', 'pending', 'ua', SNOW)
    X.move(J, 'waiting', 'pending')
  end

  -- release moves up to room of the scope's waiting jobs (key k), best
  -- first, to pending: those whose other scope has room (other). It reads
  -- just enough first and looks FILL_SCAN further only when it skipped some;
  -- stopping at MAX_RELEASE, it wakes the scope again (again).
  function X.release(k, room, other, again)
    if room <= 0 then
      return
    end
    local limit = math.min(room, X.MAX_RELEASE)
    local released = 0
    for _, n in ipairs({limit, limit + X.FILL_SCAN}) do
      local list = redis.call('ZRANGE', k .. ':waiting', 0, n - 1)
      local skipped = false
      for _, m in ipairs(list) do
        if released == limit then
          break
        end
        local J = X.load(string.sub(m, 17))
        if J and J.st == 'waiting' and other(J) then
          X.unwait(J)
          released = released + 1
        else
          skipped = true
        end
      end
      if released == limit or not skipped or #list < n then
        break
      end
    end
    if released == X.MAX_RELEASE and room > X.MAX_RELEASE then
      again()
    end
  end

  function X.fill_tenant(name)
    local t = X.tenant(name)
    local c = X.counts(t.k, 'n:waiting', 'n:pending', 'n:active')
    if c[1] <= 0 then
      return
    end
    if t.pu > NOW then
      X.wake_at('t:' .. name, t.pu)
      return
    end
    local room = c[1]
    if t.l >= 0 then
      room = math.min(room, t.l - c[2] - c[3])
    end
    X.release(t.k, room, function(J)
      return not J.g or X.group_room(J.g)
    end, function() X.wake_at('t:' .. name, NOW) end)
  end

  function X.fill_group(id)
    local g = X.group(id)
    if not g then
      return
    end
    local c = X.counts(g.k, 'n:waiting', 'n:pending', 'n:active')
    if c[1] <= 0 then
      return
    end
    local u = X.blocked_until(g)
    if u > NOW then
      X.wake_at('g:' .. id, u)
      return
    end
    local room = c[1]
    if g.mc > 0 then
      room = math.min(room, g.mc - c[2] - c[3])
    end
    if g.mi > 0 then
      room = math.min(room, 1 - c[2])
    end
    X.release(g.k, room, function(J)
      return not J.tn or X.tenant_room(J.tn)
    end, function() X.wake_at('g:' .. id, NOW) end)
  end

  -- store_new stores a job in queue name (of any slot) that is ready now,
  -- as an enqueue without a backlog check would, and returns its id and
  -- key. A job holding the unique key uk and not finished is returned
  -- instead.
  function X.store_new(name, kind, payload, tn, uk, ma)
    local base = P .. 'queue:{' .. esc(name) .. '}:'
    local q = X.qbase(base)
    local ukk = base .. 'unique:' .. esc(uk)
    local held = redis.call('GET', ukk)
    if held then
      local st = redis.call('HGET', q.jp .. held, 'st')
      if st and not final(st) then
        return held .. '-' .. id_part(esc(name)), q.jp .. held
      end
    end
    register(q)
    local last = num(redis.call('GET', q.seq))
    local s = math.max(NOW, last + 1)
    redis.call('SET', q.seq, n2s(s))
    local seq = string.format('%016.0f', s)
    local J = mkjob(q, seq, tn ~= '' and tn or nil, nil, '0')
    local h = {'k', kind, 'p', payload, 'pr', '0', 'ra', SNOW, 'ma', ma, 'uk', uk, 'ukk', ukk,
      'ca', SNOW, 'ua', SNOW}
    if J.tn then
      h[#h + 1] = 'tn'
      h[#h + 1] = tn
    end
    redis.call('ZADD', q.jobs, 0, seq)
    redis.call('SET', ukk, seq)
    local st = ready(J, nil, h)
    redis.call('HSET', J.jk, unpack(h))
    -- A new job is logged like any enqueued one, whoever stores it.
    log_job(q, seq, 'job.enqueued', st, SNOW, {k = kind, tn = tn, at = '0'})
    return seq .. '-' .. id_part(esc(name)), J.jk
  end

  X.GROUP_COUNTS = {'n:scheduled', 'n:pending', 'n:waiting', 'n:active', 'n:retrying',
    'n:completed', 'n:failed', 'n:cancelled', 'n:blocked'}

  -- complete_group marks group id done when it has jobs and none unfinished,
  -- and enqueues its completion job. The done mark is written only if it was
  -- not set (HSETNX), so the completion job is enqueued exactly once.
  function X.complete_group(id)
    local g = X.group(id)
    if not g or g.da > 0 then
      return
    end
    local c = X.counts(g.k, unpack(X.GROUP_COUNTS))
    local unfinished = c[1] + c[2] + c[3] + c[4] + c[5] + c[9]
    if unfinished > 0 or unfinished + c[6] + c[7] + c[8] == 0 then
      return
    end
    if redis.call('HSETNX', g.k, 'da', SNOW) == 0 then
      return
    end
    g.da = NOW
    redis.call('ZADD', X.DONE, SNOW, id)
    redis.call('ZREM', X.WAKE, 'x:' .. id, 'g:' .. id)
    local s = redis.call('HMGET', g.k, 'ck', 'cq', 'cp', 'tn', 'cr')
    -- The report is the completion job's default payload and the
    -- group.completed event's data (queue.CompletionReport).
    local report = '{"group":' .. cjson.encode(id) .. ',"total":' .. n2s(unfinished + c[6] + c[7] + c[8]) ..
      ',"completed":' .. n2s(c[6]) .. ',"failed":' .. n2s(c[7]) .. ',"cancelled":' .. n2s(c[8])
    if s[5] == '1' then
      report = report .. ',"cancel_requested":true'
    end
    report = report .. '}'
    local jid, jk, cq
    if s[1] then
      local payload = s[3]
      if not payload or payload == '' then
        payload = report
      end
      cq = s[2]
      if not cq or cq == '' then
        cq = 'default'
      end
      jid, jk = X.store_new(cq, s[1], payload, s[4] or '', 'group:' .. id, '__MAX_ATTEMPTS__')
      -- cjk, the completion job's key, tells the cleaner when it has
      -- finished (see ended).
      redis.call('HSET', g.k, 'cj', jid, 'cjk', jk)
    end
    log_event('group.completed', SNOW, {g = id, tn = s[4], j = jid, q = cq, d = report})
    events().append('group.completed', SNOW, {g = id, tn = s[4], j = jid, q = cq, d = report})
  end

  -- ended returns when group id ended, which is when the retention of its
  -- jobs and its own starts: when it was done, or, with a completion job,
  -- when that job finished (ea, kept by keep_end once the job is gone).
  -- It returns nil while the group has not ended, and 0 when the group is
  -- gone (its jobs keep their own retention). Read once per script.
  X.ENDED = {}
  function X.ended(id)
    local e = X.ENDED[id]
    if e == nil then
      local v = redis.call('HMGET', X.gkey(id), 'ca', 'da', 'cjk', 'ea')
      if not v[1] then
        e = 0
      elseif not v[2] then
        e = false
      elseif v[4] then
        e = tonumber(v[4])
      else
        e = tonumber(v[2])
        if v[3] then
          local c = redis.call('HMGET', v[3], 'st', 'fa')
          if c[1] and not final(c[1]) then
            e = false
          elseif c[1] then
            e = math.max(e, num(c[2]))
          end
        end
      end
      X.ENDED[id] = e
    end
    return e or nil
  end

  -- keep_end records in group id, before its completion job (hash jk,
  -- finished at fa) is deleted, the end that job gave it.
  function X.keep_end(id, jk, fa)
    local k = X.gkey(id)
    local v = redis.call('HMGET', k, 'cjk', 'da', 'ea')
    if v[1] == jk and v[2] and not v[3] then
      redis.call('HSET', k, 'ea', n2s(math.max(tonumber(v[2]), fa)))
    end
  end

  -- cancel_group marks group id cancel-requested, cancels its jobs that have
  -- not started and flags its active ones, then completes it if it can.
  function X.cancel_group(id)
    local g = X.group(id)
    if not g or g.cr or g.da > 0 then
      return
    end
    g.cr = true
    redis.call('HSET', g.k, 'cr', '1')
    redis.call('ZREM', X.WAKE, 'x:' .. id, 'g:' .. id)
    for _, jk in ipairs(redis.call('SMEMBERS', g.k .. ':open')) do
      local J = X.load(jk)
      if not J then
        redis.call('SREM', g.k .. ':open', jk)
      elseif J.st == 'active' then
        redis.call('HSET', jk, 'cr', '1', 'ua', SNOW)
      elseif not final(J.st) then
        redis.call('ZREM', J.q[J.st], qmember(J, J.st))
        finish(J.q, jk, J.seq, 'cancelled', SNOW, J.ukk, J.uf, nil, J, J.st)
      end
    end
    X.owe(X.DONE_G, id)
  end

  -- expire_wait fails a job that waited longer than its tenant's MaxWait.
  function X.expire_wait(jk)
    local J = X.load(jk)
    if not J or J.st ~= 'waiting' then
      return
    end
    local msg = string.format("queue: tenant backlog full: waited longer than tenant %s's MaxWait of %gs",
      J.tn or '', X.tenant(J.tn or '').mw / 1e6)
    record_error(jk .. ':errors', J.at, SNOW, msg)
    redis.call('ZREM', J.q.waiting, qmember(J, 'waiting'))
    finish(J.q, jk, J.seq, 'failed', SNOW, J.ukk, J.uf, {'le', msg}, J, 'waiting')
  end

  -- owe adds name to list, a list of the scopes owed a fill or a
  -- completion check, once: settle serves them in the order asked, as
  -- every store does (internal/sched's canonical order).
  function X.owe(list, name)
    if not list[name] then
      list[name] = true
      list[#list + 1] = name
    end
  end

  -- settle fills the tenants, then the groups, that got room and then
  -- completes the groups that may be done, each in the order asked, until
  -- nothing more is owed.
  function X.settle()
    for _ = 1, 100 do
      local ts, gs, ds = X.FILL_T, X.FILL_G, X.DONE_G
      if #ts + #gs + #ds == 0 then
        break
      end
      X.FILL_T, X.FILL_G, X.DONE_G = {}, {}, {}
      for _, n in ipairs(ts) do X.fill_tenant(n) end
      for _, n in ipairs(gs) do X.fill_group(n) end
      for _, n in ipairs(ds) do X.complete_group(n) end
    end
    X.drop_empty()
  end

  -- drop_empty removes from the registry the tenants of EMPTY_T that end
  -- the script with no unfinished jobs and no settings (l is written with
  -- every setting, pu by a pause), as if they had never been seen.
  function X.drop_empty()
    for name in pairs(X.EMPTY_T) do
      local v = redis.call('HMGET', X.tkey(name), 'n:scheduled', 'n:pending', 'n:waiting',
        'n:active', 'n:retrying', 'l', 'pu')
      if not v[6] and not v[7] and num(v[1]) + num(v[2]) + num(v[3]) + num(v[4]) + num(v[5]) <= 0 then
        redis.call('ZREM', X.REG, name)
      end
    end
    X.EMPTY_T = {}
  end

  -- due does the timed work listed in due (members of the wake set, by
  -- time then member) kind by kind, as every store does: the tenants, then
  -- the groups, whose wake has come are filled, then the jobs past their
  -- MaxWait fail, then the groups past their TTL are cancelled.
  function X.due(list)
    local acts = {t = X.fill_tenant, g = X.fill_group, j = X.expire_wait, x = X.cancel_group}
    for _, kind in ipairs({'t', 'g', 'j', 'x'}) do
      for _, m in ipairs(list) do
        if string.sub(m, 1, 1) == kind then
          acts[kind](string.sub(m, 3))
        end
      end
      -- A group whose last job just failed for MaxWait is done, not
      -- cancelled by a TTL that ran out in the same step.
      if kind == 'j' then
        X.settle()
      end
    end
  end
  function X.forget_group(id) X.GC[id] = nil end
  S = X
  return S
end
