-- retry: make a failed or cancelled job ready again, with fresh attempts
-- and its error history kept. KEYS: queue group, job, errors. Own
-- arguments: seq. Returns {'ok', job, woken}, {'nf'}, {'state', state},
-- {'group', state, group}, {'parent', state, parent id, parent state} or
-- {'dup', holder seq, unique key}.

-- holds reports whether job hseq of q still holds its unique key: inside
-- its window, or, without a window, not yet final (enqueue's rule).
local function holds(q, hseq, now)
  local h = redis.call('HMGET', q.jp .. hseq, 'st', 'ca', 'uf')
  if not h[1] then
    return false
  end
  local uf = tonumber(h[3] or '0')
  if uf > 0 then
    return tonumber(h[2]) + uf > now
  end
  return not final(h[1])
end

-- take_key gives the key back to the job: for good without a window, for
-- what is left of the window otherwise (nothing once it has passed).
local function take_key(ukk, seq, ca, uf, now)
  if uf <= 0 then
    redis.call('SET', ukk, seq)
  elseif ca + uf > now then
    redis.call('SET', ukk, seq, 'PX', n2s(math.ceil((ca + uf - now) / 1000)))
  end
end

-- holder returns the parent of job jk that holds it back, with its state:
-- one not completed, unless it ended and the job runs anyway (opf); an
-- ended one first, the way to bring the job back being to retry it.
local function holder(jk, run)
  local open
  for _, pk in ipairs(redis.call('LRANGE', jk .. ':pa', 0, -1)) do
    local pst = redis.call('HGET', pk, 'st')
    if pst and pst ~= 'completed' and not (run and final(pst)) then
      if pst == 'failed' or pst == 'cancelled' then
        return pk, pst
      end
      open = open or {pk, pst}
    end
  end
  if open then
    return open[1], open[2]
  end
end

local qs, a = queues()
local q, jk, seq = qs[1], KEYS[NK + 1], ARGV[a]
local now, snow = now_us()
local v = redis.call('HMGET', jk, 'st', 'g', 'pr', 'ukk', 'uf', 'ca', 'uk', 'tn', 'vo', 'vb')
local st = v[1]
if not st then
  return {'nf'}
end
if st ~= 'failed' and st ~= 'cancelled' then
  return {'state', st}
end
if v[2] and v[2] ~= '' then
  return {'group', st, v[2]}
end
if P ~= '' then
  local pk, pst = holder(jk, redis.call('HGET', jk, 'opf') == 'run')
  if pk then
    return {'parent', st, flows().idof(pk), pst}
  end
end
local ukk = v[4]
if ukk and ukk ~= '' then
  local hseq = redis.call('GET', ukk)
  if hseq and hseq ~= seq and holds(q, hseq, now) then
    return {'dup', hseq, v[7] or ''}
  end
  take_key(ukk, seq, tonumber(v[6]), tonumber(v[5] or '0'), now)
end
redis.call('ZREM', q[st], seq)
redis.call('HDEL', jk, 'at', 'sl', 'rs', 'cr', 'fa', 'tk', 'lu', 'wk')
-- ready decides pending or waiting (the tenant's room) and keeps the
-- job's place in the fair order.
local h = {'ra', snow, 'ua', snow}
ready(mkjob(q, seq, v[8], nil, v[3], v[9], v[10]), st, h)
redis.call('HSET', jk, unpack(h))
if P ~= '' and redis.call('HEXISTS', jk, 'ch') == 1 then
  flows().reopen(jk)
end
register(q)
settle()
return {'ok', read(jk, KEYS[NK + 2]), wake(qs)}
