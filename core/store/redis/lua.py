"""The Lua scripts of the Redis store (one atomic script per state change).

Every script receives the same first four ARGV: the key prefix, ``now`` (from the store's
injected clock, never Redis ``TIME``), the aging rate in points per second and the retry bonus;
script arguments follow from ARGV[5]. Scripts build key names from the prefix exactly as
:mod:`core.store.redis.keys` documents (so they address keys they were not handed in KEYS: a
single Redis, or a cluster with the whole prefix in one hash slot, e.g. ``{shopfleet}``).

Numbers are written as ``%.17g`` text (exact round trip), never through Lua's default
``tostring`` (14 digits) nor through ``cjson`` numbers. A script signals a refusal with an error
reply ``SF:<kind>:<text>`` that the store turns into the matching exception.

Over 600 lines on purpose: it is one thing, the store's whole server side, and its scripts share
one PRELUDE (key names, number formatting, ``enter``/``leave`` of the queue indexes) that each
script is registered with; split across modules, a change to the shared Lua would no longer be
read beside every script that depends on it.

Why one module over 600 lines: every script shares the one PRELUDE defined here and is read
beside it; splitting the scripts apart would separate each from the key layout and helpers it
relies on.
"""

from __future__ import annotations

from .sorts import LUA as _SORTS_LUA
from .sorts import REBUILD as _SORT_REBUILD

PRELUDE = r"""
local P = ARGV[1]
local NOW_S = ARGV[2]
local NOW = tonumber(NOW_S)
local AGING = tonumber(ARGV[3])
local BONUS = tonumber(ARGV[4])
local EPOCH = 1735689600.0
local SPAN = 1099511627776

local function k(s) return P .. ':' .. s end
local function num(x) return string.format('%.17g', x) end
local function pad(id) return string.format('%012d', tonumber(id)) end
local function fail(kind, text) return redis.error_reply('SF:' .. kind .. ':' .. text) end

-- Python's round(): half to even (x - floor(x) is exact in binary floating point)
local function pyround(x)
  local f = math.floor(x)
  local d = x - f
  if d > 0.5 then return f + 1 elseif d < 0.5 then return f
  elseif f % 2 == 0 then return f else return f + 1 end
end

-- core.priority.index_key(static_points(...), created, aging), operation for operation
local function prio_key(base, urg, attempts, bump, created)
  local a = attempts
  if a < 0 then a = 0 end
  local static = base + urg + BONUS * a + bump
  return pyround(static * 1000) - pyround((created - EPOCH) * AGING * 1000)
end

local function key_of(t, attempts, bump)
  return prio_key(tonumber(t.base), tonumber(t.urgency), attempts or tonumber(t.attempts),
                  bump or tonumber(t.bump), tonumber(t.queued_at or t.created_at))
end

local function load(id)
  local raw = redis.call('HGETALL', k('task:' .. id))
  if #raw == 0 then return nil end
  local t = {}
  for i = 1, #raw, 2 do t[raw[i]] = raw[i + 1] end
  return t
end

""" + _SORTS_LUA + r"""
local function qscore(t) return num(-(tonumber(t.band) * SPAN + tonumber(t.prio_key))) end

-- take a task out of the indexes of its (old) state
local function leave(id, t)
  local s = t.state
  local m = pad(id)
  if s == 'queued' then
    redis.call('ZREM', k('q:ready'), m)
    redis.call('ZREM', k('q:shop:' .. t.shop_id), m)
    redis.call('ZREM', k('q:age'), m)
    redis.call('ZREM', k('q:urgency'), m)
  elseif s == 'suspended' then
    redis.call('ZREM', k('q:suspended'), m)
    redis.call('ZREM', k('q:sage'), m)
  elseif s == 'scheduled' then
    redis.call('ZREM', k('q:sched'), m)
  elseif s == 'running' then
    redis.call('ZREM', k('running'), id)
    if t.lease_owner then
      redis.call('SREM', k('owner:' .. t.lease_owner), id)
      if redis.call('SCARD', k('owner:' .. t.lease_owner)) == 0 then
        redis.call('SREM', k('owners'), t.lease_owner)
      end
    end
    if redis.call('HINCRBY', k('shop_running'), t.shop_id, -1) <= 0 then
      redis.call('HDEL', k('shop_running'), t.shop_id)
    end
  end
end

-- put a task into the indexes of its (new) state
local function enter(id, t)
  local s = t.state
  local m = pad(id)
  if s == 'queued' then
    local sc = qscore(t)
    redis.call('ZADD', k('q:ready'), sc, m)
    redis.call('ZADD', k('q:shop:' .. t.shop_id), sc, m)
    if t.band == '0' then redis.call('ZADD', k('q:age'), t.queued_at or t.created_at, m) end
    if t.urgency_next_at then redis.call('ZADD', k('q:urgency'), t.urgency_next_at, m) end
  elseif s == 'suspended' then
    redis.call('ZADD', k('q:suspended'), qscore(t), m)
    if t.band == '0' then redis.call('ZADD', k('q:sage'), t.queued_at or t.created_at, m) end
  elseif s == 'scheduled' then
    redis.call('ZADD', k('q:sched'), t.not_before, m)
  elseif s == 'running' then
    redis.call('ZADD', k('running'), t.lease_until, id)
    redis.call('SADD', k('owner:' .. t.lease_owner), id)
    redis.call('SADD', k('owners'), t.lease_owner)
    redis.call('HINCRBY', k('shop_running'), t.shop_id, 1)
  end
end

-- one line of a task's history, and the same line on the fleet's event stream
local function log(id, at, from, to, reason)
  local eid = redis.call('HINCRBY', k('seq'), 'event', 1)
  redis.call('RPUSH', k('task:' .. id .. ':events'),
             cjson.encode({eid, at, from or cjson.null, to, reason}))
  redis.call('XADD', k('events'), 'MAXLEN', '~', '1000000', '*', 'id', eid, 'task', id,
             'at', at, 'from', from or '', 'to', to, 'reason', reason)
end

local WAITING = {queued = true, suspended = true, scheduled = true}

-- write a task's changed fields and keep its sort indexes (same state: no queue index moves)
local function patch(id, t, ch)
  local before = sort_members(id, t)
  local sets, dels = {}, {}
  for f, v in pairs(ch) do
    if v == false then
      dels[#dels + 1] = f
      t[f] = nil
    else
      sets[#sets + 1] = f
      sets[#sets + 1] = v
      t[f] = v
    end
  end
  if #sets > 0 then redis.call('HSET', k('task:' .. id), unpack(sets)) end
  if #dels > 0 then redis.call('HDEL', k('task:' .. id), unpack(dels)) end
  resort(before, sort_members(id, t))
end

-- change a task's fields (false = NULL), keeping every index, the counts and the log in step
local function update(id, t, ch)
  local old = t.state
  leave(id, t)
  patch(id, t, ch)
  enter(id, t)
  if t.state ~= old then
    redis.call('HINCRBY', k('counts'), old, -1)
    redis.call('HINCRBY', k('counts'), t.state, 1)
    redis.call('ZREM', k('state:' .. old), id)
    redis.call('ZADD', k('state:' .. t.state), id, id)
    log(id, t.updated_at, old, t.state, t.state_reason or '')
    if (WAITING[old] or old == 'running') and not WAITING[t.state] then
      redis.call('HINCRBY', k('seq'), 'room', 1)
    end
  end
end

local function held(id, owner)
  local t = load(id)
  if t == nil or t.state ~= 'running' or t.lease_owner ~= owner then
    return nil
  end
  return t
end

-- a claimed task's row, as RedisClaims._claimed unpacks it (t: the task after its claim;
-- was: its state before; s: its shop's name, platform, base_url, domain)
local function claim_row(id, t, was, s)
  return {id, t.type, t.shop_id, t.attempts, t.max_attempts, t.prio_key, t.preemptible,
    t.spec, t.checkpoint or '', t.created_at, was, s.name, s.platform, s.base_url, s.domain}
end

local function lost(id, owner)
  return fail('lost', 'task ' .. id .. ' is no longer held by ' .. owner ..
              ' (its lease expired and it was recovered, or it was cancelled)')
end

local function set_ticket_state(tid, old, new)
  redis.call('ZREM', k('tickets:' .. old), tid)
  redis.call('ZADD', k('tickets:' .. new), tid, tid)
end

-- open a ticket (fields: a flat list of name, value) for a task; returns its id
local function new_ticket(task_id, fields)
  local tid = redis.call('HINCRBY', k('seq'), 'ticket', 1)
  redis.call('HSET', k('ticket:' .. tid), 'id', tid, 'task_id', task_id, 'state', 'open',
             'opened_at', NOW_S, 'note', '', unpack(fields))
  redis.call('ZADD', k('tickets'), tid, tid)
  redis.call('ZADD', k('tickets:open'), tid, tid)
  redis.call('ZADD', k('task:' .. task_id .. ':tickets'), tid, tid)
  return tid
end

local function shop_of(t)
  local r = redis.call('HMGET', k('shop:' .. t.shop_id), 'name', 'platform', 'domain')
  return r[1], r[2], r[3]
end

-- a recovered task: back to the queue, or to a person when its attempts are spent
local function recover(id, t, why)
  local attempts = tonumber(t.attempts)
  if attempts >= tonumber(t.max_attempts) then
    local name, platform, domain = shop_of(t)
    local err = 'its worker was lost ' .. t.attempts .. ' times (' .. why .. ')'
    local sig = string.sub(redis.sha1hex(platform .. '|' .. t.type ..
                                         '||lease_lost|worker lost'), 1, 16)
    local tid = new_ticket(id, {'kind', 'failure', 'shop', name, 'platform', platform,
      'domain', domain, 'task_type', t.type, 'step_name', '', 'error_class', 'lease_lost',
      'error', err, 'signature', sig, 'evidence', '{}'})
    update(id, t, {state = 'waiting_human', state_reason = 'ticket #' .. tid .. ': ' .. err,
      updated_at = NOW_S, lease_owner = false, lease_until = false,
      error_class = 'lease_lost', last_error = err})
  else
    update(id, t, {state = 'queued', state_reason = 'recovered: ' .. why, updated_at = NOW_S,
      lease_owner = false, lease_until = false, not_before = NOW_S,
      prio_key = num(key_of(t))})
  end
end

-- back to the queue after a person's answer: attempts and crashes reset, re-entry bonus
local function requeue(id, t, cp, why, reentry)
  local bump = tonumber(t.bump) + reentry
  update(id, t, {state = 'queued', state_reason = why, attempts = '0', crashes = '0',
    not_before = NOW_S, bump = num(bump), prio_key = num(key_of(t, 0, bump)),
    checkpoint = cp, updated_at = NOW_S})
end

-- scheduled tasks whose not_before came join the queue: at most n, oldest first (their key
-- already ages from not_before)
local function promote(n)
  local due = redis.call('ZRANGEBYSCORE', k('q:sched'), '-inf', NOW_S, 'LIMIT', 0, n)
  for _, m in ipairs(due) do
    local id = tostring(tonumber(m))
    local t = load(id)
    if t and t.state == 'scheduled' then
      update(id, t, {state = 'queued', state_reason = 'due (not before reached)',
                     updated_at = NOW_S})
    else
      redis.call('ZREM', k('q:sched'), m)
    end
  end
  return #due
end

local function hard_age(cutoff)
  local n = 0
  for _, zk in ipairs({k('q:age'), k('q:sage')}) do
    for _, m in ipairs(redis.call('ZRANGEBYSCORE', zk, '-inf', cutoff)) do
      local id = tostring(tonumber(m))
      local t = load(id)
      if t and t.band == '0' and WAITING[t.state] then
        update(id, t, {band = '1', preemptible = '0', updated_at = NOW_S})
        n = n + 1
      else
        redis.call('ZREM', zk, m)
      end
    end
  end
  return n
end
"""

SUBMIT = r"""
-- ARGV[5] tasks (JSON list of objects, numbers as text), ARGV[6] backlog limit,
-- ARGV[7] limit with the urgent reserve
local tasks = cjson.decode(ARGV[5])
local limit = tonumber(ARGV[6])
local reserve = tonumber(ARGV[7])
local ids = {}
local fresh = {}
for i, t in ipairs(tasks) do
  local known = false
  if t.key then
    local id = redis.call('HGET', k('idem'), t.key)
    if id then
      local r = redis.call('HMGET', k('task:' .. id), 'type', 'shop_id', 'spec')
      if r[1] ~= t.type or r[2] ~= t.shop_id or r[3] ~= t.spec then
        return fail('idem', i .. '|' .. id)
      end
      ids[i] = id
      known = true
    end
  end
  if not known then fresh[#fresh + 1] = i end
end
if #fresh > 0 then
  local c = redis.call('HMGET', k('counts'), 'queued', 'suspended', 'scheduled')
  local queued = tonumber(c[1] or '0') + tonumber(c[2] or '0') + tonumber(c[3] or '0')
  local routine = 0
  for _, i in ipairs(fresh) do
    if not tasks[i].urgent then routine = routine + 1 end
  end
  if routine > 0 and queued + routine > limit then
    return fail('backlog', queued .. '|' .. limit .. '|0')
  end
  if queued + #fresh > reserve then
    return fail('backlog', queued .. '|' .. reserve .. '|1')
  end
end
for _, i in ipairs(fresh) do
  local t = tasks[i]
  local id = tostring(redis.call('HINCRBY', k('seq'), 'task', 1))
  -- a delayed task (start ahead of now) waits as scheduled; its key ages from its start
  local state, why, start = 'queued', 'submitted', NOW_S
  if t.start and tonumber(t.start) > NOW then
    state, why, start = 'scheduled', 'submitted, not before ' .. t.start_iso, t.start
  end
  local f = {'id', id, 'type', t.type, 'shop_id', t.shop_id, 'state', state,
    'state_reason', why, 'base', t.base, 'urgency', t.urgency,
    'urgency_fixed', t.urgency_fixed, 'bump', '0', 'prio_key', t.prio_key, 'band', '0',
    'preemptible', '1', 'created_at', NOW_S, 'updated_at', NOW_S, 'not_before', start,
    'queued_at', start,
    'attempts', '0', 'max_attempts', t.max_attempts, 'spec', t.spec, 'crashes', '0'}
  if t.key then f[#f + 1] = 'key'; f[#f + 1] = t.key end
  if t.urgency_next_at then f[#f + 1] = 'urgency_next_at'; f[#f + 1] = t.urgency_next_at end
  if t.deadline then f[#f + 1] = 'deadline'; f[#f + 1] = t.deadline end
  redis.call('HSET', k('task:' .. id), unpack(f))
  local row = load(id)
  enter(id, row)
  resort({}, sort_members(id, row))
  if t.key then redis.call('HSET', k('idem'), t.key, id) end
  redis.call('HINCRBY', k('counts'), state, 1)
  redis.call('ZADD', k('state:' .. state), id, id)
  redis.call('ZADD', k('tasks'), id, id)
  redis.call('ZADD', k('shop_tasks:' .. t.shop_id), id, id)
  log(id, NOW_S, nil, state, why)
  ids[i] = id
end
return ids
"""

_CLAIM_HEAD = r"""
-- ARGV[5] owner, [6] limit, [7] lease until, [8] hard-aging cutoff (created_at),
-- [9] max tasks per shop, [10] excluded domains (JSON), [11] probe domains (JSON),
-- [12] rows looked at before the per-shop search, [13] '1' = check urgency re-estimates,
-- [14] scheduled tasks promoted at most (due ones join the queue first),
-- [15] excluded shop names (JSON), [16] probe shop names (JSON) (#17 proxy breakers)
local OWNER = ARGV[5]
local LIMIT = tonumber(ARGV[6])
local UNTIL = ARGV[7]
local MAXPS = tonumber(ARGV[9])
local ex = {}
for _, d in ipairs(cjson.decode(ARGV[10])) do ex[d] = true end
local probes = {}
for _, d in ipairs(cjson.decode(ARGV[11])) do probes[d] = true end
local FAST = tonumber(ARGV[12])
local exshops = {}
for _, n in ipairs(cjson.decode(ARGV[15] or '[]')) do exshops[n] = true end
local probeshops = {}
for _, n in ipairs(cjson.decode(ARGV[16] or '[]')) do probeshops[n] = true end

if LIMIT <= 0 then return '[]' end
promote(tonumber(ARGV[14]))
hard_age(ARGV[8])
if ARGV[13] == '1' and #redis.call('ZRANGEBYSCORE', k('q:urgency'), '-inf', NOW_S,
                                   'LIMIT', 0, 1) > 0 then
  return '"urgency"'
end
"""

_CLAIM_BODY = r"""
local shops = {}
local function shop(sid)
  local s = shops[sid]
  if not s then
    local r = redis.call('HMGET', k('shop:' .. sid), 'name', 'platform', 'base_url', 'domain',
                         'paused', 'hold_until')
    s = {name = r[1], platform = r[2], base_url = r[3], domain = r[4], paused = r[5] == '1',
         held = r[6] and tonumber(r[6]) > NOW}
    s.dpaused = redis.call('HEXISTS', k('paused_domains'), r[4]) == 1
    shops[sid] = s
  end
  return s
end
local function blocked(sid)
  local s = shop(sid)
  if s.paused or s.held or s.dpaused or ex[s.domain] or exshops[s.name] then return true end
  return tonumber(redis.call('HGET', k('shop_running'), sid) or '0') >= MAXPS
end
local function eligible(m)
  local r = redis.call('HMGET', k('task:' .. tonumber(m)), 'shop_id', 'not_before')
  return (not blocked(r[1])) and tonumber(r[2]) <= NOW
end
-- the first eligible member of a queue zset, looking at most `maxrows` rows (nil: all);
-- returns member, score — or nil, exhausted
local function first(zk, chunk, maxrows)
  local start = 0
  while true do
    local rows = redis.call('ZRANGE', zk, start, start + chunk - 1, 'WITHSCORES')
    for i = 1, #rows, 2 do
      if eligible(rows[i]) then return rows[i], tonumber(rows[i + 1]) end
    end
    if #rows < chunk * 2 then return nil, true end
    start = start + chunk
    if maxrows and start >= maxrows then return nil, false end
  end
end
local function better(m1, s1, m2, s2)
  if m1 == nil then return false end
  if m2 == nil then return true end
  return s1 < s2 or (s1 == s2 and m1 < m2)
end
local function pick()
  local sm, ss = first(k('q:suspended'), 64, nil)
  local qm, qs = first(k('q:ready'), FAST, FAST)
  if qm == nil and qs == false then
    -- the top of the queue is all busy or paused shops: the best task of each other shop
    for _, sid in ipairs(redis.call('HVALS', k('shops'))) do
      if not blocked(sid) then
        local m, s = first(k('q:shop:' .. sid), 64, nil)
        if better(m, s, qm, qs) then qm, qs = m, s end
      end
    end
  end
  if better(sm, ss, qm, qs) then return sm end
  return qm
end

local out = {}
for _ = 1, LIMIT do
  local m = pick()
  if m == nil then break end
  local id = tostring(tonumber(m))
  local t = load(id)
  local was = t.state
  local why = (was == 'suspended' and 'resumed by ' or 'claimed by ') .. OWNER
  update(id, t, {state = 'running', state_reason = why, lease_owner = OWNER,
    lease_until = UNTIL, attempts = num(tonumber(t.attempts) + 1), started_at = NOW_S,
    updated_at = NOW_S})
  local s = shop(t.shop_id)
  out[#out + 1] = claim_row(id, t, was, s)
  if probes[s.domain] then ex[s.domain] = true end
  if probeshops[s.name] then exshops[s.name] = true end
end
if #out == 0 then return '[]' end
return cjson.encode(out)
"""
CLAIM = _CLAIM_HEAD + _CLAIM_BODY

# The writes of an ack, for a task ``t`` (id ``id``) held by the caller, results ``res``.
_ACK_WRITES = r"""
local ch = {state = 'done', state_reason = 'finished', finished_at = NOW_S,
  updated_at = NOW_S, lease_owner = false, lease_until = false}
if res ~= '' then ch.results = res end
update(id, t, ch)
for _, tid in ipairs(redis.call('ZRANGE', k('task:' .. id .. ':tickets'), 0, -1)) do
  if redis.call('HGET', k('ticket:' .. tid), 'state') == 'answered' then
    redis.call('HSET', k('ticket:' .. tid), 'state', 'closed', 'closed_at', NOW_S)
    set_ticket_state(tid, 'answered', 'closed')
  end
end
"""

ACK = r"""
-- ARGV[5] id, [6] owner, [7] results JSON or ''
local id, owner, res = ARGV[5], ARGV[6], ARGV[7]
local t = held(id, owner)
if not t then return lost(id, owner) end
""" + _ACK_WRITES + r"""return 'done'
"""

# #20: an ack and the claim of the next task for the freed slot in one script. The lease is
# checked before anything is written (a lost lease claims nothing); the claim's maintenance
# and its urgency check come next (asked to re-estimate urgencies first, it returns before
# the ack: the caller re-estimates and runs it again); then the ack; then the claim, under
# pcall: a claim that fails keeps the ack (its pick writes nothing before it chooses) and
# says why in ``{"claim_failed": ...}``. Who acked and what that claimed is kept for a lease's
# time (``P:ack_claim:<id>``): the same call again, when a lost reply hid that it ran, answers
# the same instead of "lost" and claims nothing more.
# ARGV[5..16] as CLAIM (limit 1), [17] id to ack, [18] its lease owner, [19] results or ''.
ACK_AND_CLAIM = r"""
local ACK_ID, ACK_OWNER = ARGV[17], ARGV[18]
local ACK_T = held(ACK_ID, ACK_OWNER)
if not ACK_T then
  -- Called again by the same owner after its reply was lost: this script already ran. Its
  -- answer again (the task it claimed, if this owner still holds it by that very claim —
  -- not by a later one, after the task was recovered and claimed again), never a second
  -- claim.
  local raw = redis.call('GET', k('ack_claim:' .. ACK_ID))
  local prev = raw and cjson.decode(raw)
  if prev and prev[1] == ACK_OWNER then
    local n = prev[2] ~= '' and held(prev[2], ACK_OWNER)
    if not n or n.started_at ~= prev[4] then return '[]' end
    local r = redis.call('HMGET', k('shop:' .. n.shop_id), 'name', 'platform', 'base_url',
                         'domain')
    return cjson.encode({claim_row(prev[2], n, prev[3],
                                   {name = r[1], platform = r[2], base_url = r[3],
                                    domain = r[4]})})
  end
  return lost(ACK_ID, ACK_OWNER)
end
""" + _CLAIM_HEAD + r"""
do
  local id, t, res = ACK_ID, ACK_T, ARGV[19]
""" + _ACK_WRITES + r"""end
local ok, claimed = pcall(function()
""" + _CLAIM_BODY + r"""end)
local nid, was = '', ''
if ok and claimed ~= '[]' then
  local row = cjson.decode(claimed)[1]
  nid, was = tostring(row[1]), row[11]
end
-- What this ack claimed, for a repeat of the call whose reply was lost (above); kept as
-- long as the claimed task's lease (a repeat comes within a third of it), then it expires.
redis.call('SET', k('ack_claim:' .. ACK_ID), cjson.encode({ACK_OWNER, nid, was, NOW_S}),
           'EX', math.max(60, math.ceil(tonumber(UNTIL) - NOW)))
if ok then return claimed end
if type(claimed) == 'table' then claimed = claimed.err or cjson.encode(claimed) end
return cjson.encode({claim_failed = tostring(claimed)})
"""

FAIL = r"""
-- ARGV[5] id, [6] owner, [7] error class, [8] message, [9] retry 1/0, [10] retry_after_s
-- or '', [11] evidence JSON or '', [12] backoff_s, [13] backoff max
local id, owner, ec, msg = ARGV[5], ARGV[6], ARGV[7], ARGV[8]
local t = held(id, owner)
if not t then return fail('lost', 'task ' .. id .. ' is no longer held by ' .. owner) end
local attempts = tonumber(t.attempts)
local max_attempts = tonumber(t.max_attempts)
local ch = {updated_at = NOW_S, error_class = ec, last_error = msg, lease_owner = false,
  lease_until = false}
if ARGV[11] ~= '' then ch.evidence = ARGV[11] end
if ARGV[9] ~= '1' or attempts >= max_attempts then
  local why = 'no retry for this error'
  if ARGV[9] == '1' then why = t.attempts .. ' attempts spent' end
  ch.state = 'failed'
  ch.state_reason = ec .. ': ' .. why
  ch.finished_at = NOW_S
  update(id, t, ch)
  return 'failed'
end
local delay = math.min(tonumber(ARGV[12]) * 2 ^ (attempts - 1), tonumber(ARGV[13]))
if ARGV[10] ~= '' then delay = math.max(delay, tonumber(ARGV[10])) end
ch.state = 'queued'
ch.state_reason = string.format('%s: retry %d/%d in %.0fs', ec, attempts + 1, max_attempts,
                                delay)
ch.not_before = num(NOW + delay)
ch.prio_key = num(key_of(t))
update(id, t, ch)
return 'queued'
"""

RELEASE = r"""
-- ARGV[5] id, [6] owner, [7] reason, [8] checkpoint JSON or '', [9] new state,
-- [10] seconds before it may be claimed again (0: now)
local id, owner = ARGV[5], ARGV[6]
local t = held(id, owner)
if not t then return lost(id, owner) end
local ch = {state = ARGV[9], state_reason = ARGV[7], updated_at = NOW_S,
  attempts = num(math.max(0, tonumber(t.attempts) - 1)), preempt_requested = false,
  lease_owner = false, lease_until = false}
if ARGV[8] ~= '' then ch.checkpoint = ARGV[8] end
local delay = tonumber(ARGV[10] or '0') or 0
if delay > 0 then
  ch.not_before = num(math.max(tonumber(t.not_before or '0') or 0, NOW + delay))
end
update(id, t, ch)
return ARGV[9]
"""

CHECKPOINT = r"""
-- ARGV[5] id, [6] owner, [7] checkpoint JSON
local id, owner = ARGV[5], ARGV[6]
local t = held(id, owner)
if not t then return fail('lost', 'task ' .. id .. ' is no longer held by ' .. owner) end
patch(id, t, {checkpoint = ARGV[7], updated_at = NOW_S})
return 'ok'
"""

RENEW = r"""
-- ARGV[5] owner, [6] lease until, [7..] ids; returns the ids no longer held
local owner, lease_until = ARGV[5], ARGV[6]
local gone = {}
for i = 7, #ARGV do
  local id = ARGV[i]
  local r = redis.call('HMGET', k('task:' .. id), 'state', 'lease_owner')
  if r[1] == 'running' and r[2] == owner then
    redis.call('HSET', k('task:' .. id), 'lease_until', lease_until)
    redis.call('ZADD', k('running'), lease_until, id)
  else
    gone[#gone + 1] = id
  end
end
return gone
"""

RECOVER = r"""
-- ARGV[5..]: triples id, owner, why; a why of 'lease expired' also needs the lease still
-- past due. Returns the recovered ids.
local out = {}
for i = 5, #ARGV, 3 do
  local id, owner, why = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local t = load(id)
  if t and t.state == 'running' and t.lease_owner == owner and
     (why ~= 'lease expired' or (t.lease_until and tonumber(t.lease_until) < NOW)) then
    recover(id, t, why)
    out[#out + 1] = id
  end
end
return out
"""

LOST_WORKERS = r"""
-- ARGV[5] heartbeat cutoff, [6..] owners (alive, silent since before the cutoff).
-- Marks them lost and requeues their running tasks now. Returns the recovered ids.
local cutoff = tonumber(ARGV[5])
local out = {}
for i = 6, #ARGV do
  local owner = ARGV[i]
  local w = redis.call('HMGET', k('worker:' .. owner), 'state', 'heartbeat_at', 'host')
  if w[1] == 'alive' and tonumber(w[2]) < cutoff then
    -- its tasks are requeued here: it holds none any more
    redis.call('HSET', k('worker:' .. owner), 'state', 'lost', 'running', '0')
    local why = 'worker ' .. owner .. ' on ' .. (w[3] or '') .. ' stopped heartbeating'
    local ids = redis.call('SMEMBERS', k('owner:' .. owner))
    table.sort(ids, function(a, b) return tonumber(a) < tonumber(b) end)
    for _, id in ipairs(ids) do
      local t = load(id)
      if t and t.state == 'running' and t.lease_owner == owner then
        recover(id, t, why)
        out[#out + 1] = id
      end
    end
  end
end
return out
"""

CRASH = r"""
-- ARGV[5] id, [6] owner, [7] error class, [8] message, [9] quarantine 1/0,
-- [10] evidence JSON or ''
local id, owner, ec = ARGV[5], ARGV[6], ARGV[7]
local t = held(id, owner)
if not t then return fail('lost', 'task ' .. id .. ' is no longer held by ' .. owner) end
local ch = {crashes = num(tonumber(t.crashes or '0') + 1), lease_owner = false,
  lease_until = false, updated_at = NOW_S, error_class = ec, last_error = ARGV[8]}
if ARGV[10] ~= '' then ch.evidence = ARGV[10] end
if ARGV[9] == '1' then
  ch.state = 'quarantined'
  ch.state_reason = 'quarantined: ' .. ec .. ' again (poison pill)'
else
  ch.state = 'queued'
  ch.state_reason = ec .. ': retry on a fresh browser'
  ch.not_before = NOW_S
  ch.prio_key = num(key_of(t))
end
update(id, t, ch)
return ch.state
"""

OPEN_TICKET = r"""
-- ARGV[5] id, [6] owner, [7] kind, [8] step or '', [9] step name, [10] error class,
-- [11] error, [12] signature key, [13] evidence JSON, [14] reason or '',
-- [15] rule id to count a hit for, or ''
local id, owner = ARGV[5], ARGV[6]
local t = held(id, owner)
if not t then return fail('lost', 'task ' .. id .. ' is no longer held by ' .. owner) end
if ARGV[15] ~= '' then redis.call('HINCRBY', k('rule:' .. ARGV[15]), 'hits', 1) end
local name, platform, domain = shop_of(t)
local f = {'kind', ARGV[7], 'shop', name, 'platform', platform, 'domain', domain,
  'task_type', t.type, 'step_name', ARGV[9], 'error_class', ARGV[10], 'error', ARGV[11],
  'signature', ARGV[12], 'evidence', ARGV[13]}
if ARGV[8] ~= '' then f[#f + 1] = 'step'; f[#f + 1] = ARGV[8] end
local tid = new_ticket(id, f)
local reason = ARGV[14]
if reason == '' then reason = 'ticket #' .. tid .. ': ' .. ARGV[10] end
update(id, t, {state = 'waiting_human', state_reason = reason, updated_at = NOW_S,
  lease_owner = false, lease_until = false, error_class = ARGV[10], last_error = ARGV[11],
  evidence = ARGV[13]})
return tid
"""

RULE = r"""
-- ARGV[5] id, [6] owner, [7] rule id, [8] why, [9] expected checkpoint or '' (NULL),
-- [10] new checkpoint, [11] delay_s, [12] error class, [13] error
local id, owner = ARGV[5], ARGV[6]
local t = held(id, owner)
if not t then return fail('lost', 'task ' .. id .. ' is no longer held by ' .. owner) end
if (t.checkpoint or '') ~= ARGV[9] then return 'retry' end
redis.call('HINCRBY', k('rule:' .. ARGV[7]), 'hits', 1)
update(id, t, {state = 'queued', state_reason = ARGV[8],
  not_before = num(NOW + tonumber(ARGV[11])), checkpoint = ARGV[10], lease_owner = false,
  lease_until = false, updated_at = NOW_S, error_class = ARGV[12], last_error = ARGV[13]})
return 'queued'
"""

ANSWER = r"""
-- ARGV[5] ticket id, [6] action, [7] note, [8] expected checkpoint or '', [9] new
-- checkpoint, [10] why, [11] re-entry bonus, [12] error_norm, [13] rule action or '',
-- [14] rule delay, [15] rule signature key, [16] rule description
local tid, act, note = ARGV[5], ARGV[6], ARGV[7]
local tk = redis.call('HMGET', k('ticket:' .. tid), 'state', 'task_id', 'signature',
                      'platform', 'task_type', 'step_name', 'error_class')
if not tk[1] then return fail('invalid', 'ticket|no ticket with id ' .. tid) end
if tk[1] ~= 'open' then return fail('refused', 'ticket ' .. tid .. ' is ' .. tk[1] ..
                                    ', not open') end
local id = tk[2]
local t = load(id)
if t == nil or t.state ~= 'waiting_human' then
  return fail('refused', 'task ' .. id .. ' is not waiting for a person (' ..
              (t and t.state or 'gone') .. ')')
end
if (t.checkpoint or '') ~= ARGV[8] then return 'retry' end
local why = ARGV[10]
local state = 'answered'
if act == 'done' then
  update(id, t, {state = 'done', state_reason = why, finished_at = NOW_S, updated_at = NOW_S})
  state = 'closed'
elseif act == 'cancel' then
  update(id, t, {state = 'cancelled', state_reason = why, finished_at = NOW_S,
    updated_at = NOW_S})
  state = 'cancelled'
else
  requeue(id, t, ARGV[9], why, tonumber(ARGV[11]))
end
redis.call('HSET', k('ticket:' .. tid), 'state', state, 'action', act, 'note', note,
           'answered_at', NOW_S)
if state ~= 'answered' then redis.call('HSET', k('ticket:' .. tid), 'closed_at', NOW_S) end
set_ticket_state(tid, 'open', state)
local kid = redis.call('HINCRBY', k('seq'), 'kb', 1)
redis.call('HSET', k('kb:' .. kid), 'id', kid, 'signature', tk[3], 'ticket_id', tid,
  'at', NOW_S, 'platform', tk[4], 'task_type', tk[5], 'step_name', tk[6],
  'error_class', tk[7], 'error_norm', ARGV[12], 'action', act, 'note', note)
redis.call('ZADD', k('kb'), kid, kid)
redis.call('ZADD', k('kb:sig:' .. tk[3]), kid, kid)
if ARGV[13] ~= '' then
  local rid = redis.call('HINCRBY', k('seq'), 'rule', 1)
  redis.call('HSET', k('rule:' .. rid), 'id', rid, 'signature', ARGV[15], 'action', ARGV[13],
    'delay_s', ARGV[14], 'note', note, 'enabled', '1', 'created_at', NOW_S,
    'from_answer', kid, 'hits', '0', 'description', ARGV[16])
  redis.call('ZADD', k('rules'), rid, rid)
  redis.call('ZADD', k('rules:sig:' .. ARGV[15]), rid, rid)
end
return 'ok'
"""

UNQUARANTINE = r"""
-- ARGV[5] id, [6] expected checkpoint or '', [7] new checkpoint, [8] re-entry bonus
local id = ARGV[5]
local t = load(id)
if t == nil then return fail('invalid', 'task|no task with id ' .. id) end
if t.state ~= 'quarantined' then
  return fail('refused', 'task ' .. id .. ' is ' .. t.state .. ', not quarantined')
end
if (t.checkpoint or '') ~= ARGV[6] then return 'retry' end
requeue(id, t, ARGV[7], 'released from quarantine by operator', tonumber(ARGV[8]))
return 'ok'
"""

BUMP = r"""
-- ARGV[5] id, [6] 'to' or 'by', [7] value
local id = ARGV[5]
local t = load(id)
if t == nil then return fail('unknown', id) end
local s = t.state
if s == 'done' or s == 'failed' or s == 'cancelled' then
  return fail('refused', 'task ' .. id .. ' is ' .. s ..
              '; only unfinished tasks can be bumped')
end
local base, urg, attempts = tonumber(t.base), tonumber(t.urgency), tonumber(t.attempts)
local bump, created = tonumber(t.bump), tonumber(t.queued_at or t.created_at)
-- a running task's attempt in flight has earned no retry bonus yet (its key has none)
if s == 'running' then attempts = attempts - 1 end
local a = attempts
if a < 0 then a = 0 end
local static = base + urg + BONUS * a + bump
local current = static + AGING * math.max(0.0, NOW - created)
local delta
if ARGV[6] == 'to' then delta = tonumber(ARGV[7]) - current else delta = tonumber(ARGV[7]) end
local nb = bump + delta
update(id, t, {bump = num(nb), prio_key = num(key_of(t, attempts, nb)), updated_at = NOW_S})
log(id, NOW_S, s, s, string.format('bumped %+.3f to %.3f', delta, current + delta))
return num(current + delta)
"""

CANCEL = r"""
-- ARGV[5] id, [6] reason
local id = ARGV[5]
local t = load(id)
if t == nil then return fail('unknown', id) end
local s = t.state
if s == 'done' or s == 'failed' or s == 'cancelled' then
  return fail('refused', 'task ' .. id .. ' is already ' .. s)
end
update(id, t, {state = 'cancelled', state_reason = ARGV[6], finished_at = NOW_S,
  updated_at = NOW_S, lease_owner = false, lease_until = false})
-- its open or answered tickets end with it
for _, tid in ipairs(redis.call('ZRANGE', k('task:' .. id .. ':tickets'), 0, -1)) do
  local ts = redis.call('HGET', k('ticket:' .. tid), 'state')
  if ts == 'open' or ts == 'answered' then
    redis.call('HSET', k('ticket:' .. tid), 'state', 'cancelled', 'closed_at', NOW_S)
    set_ticket_state(tid, ts, 'cancelled')
  end
end
return s
"""

THRESHOLDS = r"""
-- ARGV[5] hard-aging cutoff, [6..] triples id, urgency points, next change or ''
promote(1000)
local hard = hard_age(ARGV[5])
local due = 0
for i = 6, #ARGV, 3 do
  local id = ARGV[i]
  local t = load(id)
  if t and t.state == 'queued' and t.urgency_next_at and
     tonumber(t.urgency_next_at) <= NOW then
    local nxt = ARGV[i + 2]
    if nxt == '' then nxt = false end
    local pk = num(prio_key(tonumber(t.base), tonumber(ARGV[i + 1]), tonumber(t.attempts),
                            tonumber(t.bump), tonumber(t.queued_at or t.created_at)))
    update(id, t, {urgency = ARGV[i + 1], urgency_next_at = nxt, prio_key = pk,
      updated_at = NOW_S})
  end
  due = due + 1
end
return {hard, due}
"""

REKEY = r"""
-- recompute every queued task's key (the aging rate changed)
local n = 0
for _, zk in ipairs({k('q:ready'), k('q:sched')}) do
  for _, m in ipairs(redis.call('ZRANGE', zk, 0, -1)) do
    local id = tostring(tonumber(m))
    local t = load(id)
    if t then
      update(id, t, {prio_key = num(key_of(t))})
      n = n + 1
    end
  end
end
return n
"""

LOG_EVENT = r"""
-- ARGV[5] id, [6] reason
local s = redis.call('HGET', k('task:' .. ARGV[5]), 'state')
if s then log(ARGV[5], NOW_S, s, s, ARGV[6]) end
return 'ok'
"""

PREEMPT = r"""
-- ARGV[5] id, [6] reason
local s = redis.call('HGET', k('task:' .. ARGV[5]), 'state')
if not s then return fail('unknown', ARGV[5]) end
if s ~= 'running' then
  return fail('refused', 'task ' .. ARGV[5] .. ' is ' .. s ..
              '; only a running task can be preempted')
end
redis.call('HSET', k('task:' .. ARGV[5]), 'preempt_requested', ARGV[6])
return 'ok'
"""

ADD_SHOP = r"""
-- ARGV[5] name, [6] platform, [7] base_url, [8] domain, [9] username, [10] password (b64)
if redis.call('HEXISTS', k('shops'), ARGV[5]) == 1 then
  return 0
end
local id = redis.call('HINCRBY', k('seq'), 'shop', 1)
redis.call('HSET', k('shop:' .. id), 'id', id, 'name', ARGV[5], 'platform', ARGV[6],
  'base_url', ARGV[7], 'domain', ARGV[8], 'username', ARGV[9], 'paused', '0',
  'created_at', NOW_S)
if ARGV[10] ~= '' then redis.call('HSET', k('shop:' .. id), 'password_enc', ARGV[10]) end
redis.call('HSET', k('shops'), ARGV[5], id)
return id
"""

# --- #18 schedules: a firing's tasks and its mark in one script. The mark is compared first
# (of several workers only the one that read the current mark fires); the submission is
# SUBMIT's own (its error returns come before any write); the mark moves last.
# ARGV[5..7] as SUBMIT, [8] schedule name, [9] expected mark, [10] new mark.
_FIRE_HEAD = r"""
local sk = k('schedule:' .. ARGV[8])
local cur = redis.call('HGET', sk, 'mark')
if not cur then return fail('invalid', 'NAME|no schedule named ' .. ARGV[8]) end
if tonumber(cur) ~= tonumber(ARGV[9]) then return 'moved' end
"""
_SUBMIT_END = "  ids[i] = id\nend\nreturn ids\n"
assert SUBMIT.count(_SUBMIT_END) == 1
FIRE = _FIRE_HEAD + SUBMIT.replace(_SUBMIT_END, "  ids[i] = id\nend\n"
                                   "redis.call('HSET', sk, 'mark', ARGV[10], 'updated_at', NOW_S)\n"
                                   "return ids\n")

# --- #18 shop tags: ARGV[5] shop id, [6] JSON tags to add, [7] JSON tags to remove,
# [8] most tags a shop may have
RETAG = r"""
local sk = k('shop:' .. ARGV[5])
local have = {}
for _, t in ipairs(cjson.decode(redis.call('HGET', sk, 'tags') or '[]')) do have[t] = true end
for _, t in ipairs(cjson.decode(ARGV[6])) do have[t] = true end
for _, t in ipairs(cjson.decode(ARGV[7])) do have[t] = nil end
local out = {}
for t in pairs(have) do out[#out + 1] = t end
if #out > tonumber(ARGV[8]) then
  return fail('invalid', 'TAG|a shop has at most ' .. ARGV[8] .. ' tags')
end
table.sort(out)
if #out == 0 then redis.call('HSET', sk, 'tags', '[]')
else redis.call('HSET', sk, 'tags', cjson.encode(out)) end
return #out
"""

SCRIPTS: dict[str, str] = {
    "fire": FIRE, "retag": RETAG,  # #18
    "submit": SUBMIT, "claim": CLAIM, "ack": ACK, "fail": FAIL, "release": RELEASE,
    "ack_and_claim": ACK_AND_CLAIM,
    "checkpoint": CHECKPOINT, "renew": RENEW, "recover": RECOVER,
    "lost_workers": LOST_WORKERS, "crash": CRASH, "open_ticket": OPEN_TICKET, "rule": RULE,
    "answer": ANSWER, "unquarantine": UNQUARANTINE, "bump": BUMP, "cancel": CANCEL,
    "thresholds": THRESHOLDS, "rekey": REKEY, "log_event": LOG_EVENT, "preempt": PREEMPT,
    "add_shop": ADD_SHOP, "sort_rebuild": _SORT_REBUILD,  # #15
}
"""Script name → body (each runs with :data:`PRELUDE` in front)."""
