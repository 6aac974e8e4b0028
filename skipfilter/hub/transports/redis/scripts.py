"""The Lua scripts the Redis transport runs: each one atomic, each bounded in work.

``APPEND`` adds a group of updates and subscription events (one call for every publish
that arrived together), and trims at most ``step`` old entries per entry added:
updates beyond the history size, and subscription events beyond a budget of their own, so
events can never push updates out of the replay window. The sizes in force are the
cluster's (``{prefix}:config``, the largest any node asked for), so nodes started with
different sizes never trim each other's history, and lowering it trims step by step.

``READ`` returns entries of a range until a byte budget is reached, asking Redis for a few
entries at a time: a replay over large updates transfers what it keeps, not 256 rows to
keep two of them.
"""

from __future__ import annotations

from typing import NamedTuple


class HistoryKeys(NamedTuple):
    """The keys that hold one hub's history under its prefix, in ``APPEND``'s KEYS order
    (a tuple: ``*keys`` passes them to the script in that order)."""

    updates: str  # the Redis Stream of updates and subscription events
    ids: str  # hash: update id -> stream id (``Last-Event-ID`` lookups)
    events: str  # list: stream ids of subscription events (their own trim budget)
    config: str  # hash: the cluster's history sizes (the largest any node asked for)
    trimmed: str  # the trim cursor

    @classmethod
    def of(cls, prefix: str) -> HistoryKeys:
        """The keys under ``prefix`` (``?prefix=`` in the URL)."""
        return cls(*(f"{prefix}:{name}" for name in cls._fields))


#: KEYS: ``HistoryKeys`` (stream, ids hash, events list, config hash, trim cursor).
#: ARGV: history size, events size, step, then five values per entry: the encoded update,
#: its id, its private flag and topics (``t``, what a tail matches without decoding the
#: update), its kind ('u' or 'e'), the publisher's token ('' for none: the tail tells its
#: publisher it was delivered). The fields go in that order, the token last (where a
#: tail, an older hub's included, looks for it). Appends the entries in order, each on
#: its own: one that Redis refuses (its XADD's error) does not stop the others, and
#: answers ``!`` and the error where the others answer their stream id. Then trims at
#: most ``step`` old entries per entry added.
APPEND = """
local stream, ids, events, config, cursor = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local out, added = {}, 0
for at = 4, #ARGV, 5 do
  local fields = {'u', ARGV[at], 'i', ARGV[at + 1], 't', ARGV[at + 2]}
  local kind, token = ARGV[at + 3], ARGV[at + 4]
  if kind == 'e' then
    fields[#fields + 1], fields[#fields + 2] = 'k', 'e'
  end
  if token ~= '' then
    fields[#fields + 1], fields[#fields + 2] = 'n', token
  end
  local sid = redis.pcall('XADD', stream, '*', unpack(fields))
  if type(sid) == 'table' and sid.err then
    out[#out + 1] = '!' .. sid.err
  else
    out[#out + 1] = sid
    added = added + 1
    if kind == 'e' then
      redis.call('RPUSH', events, sid)
    end
    redis.call('HSETNX', ids, ARGV[at + 1], sid)  -- a reused id resolves to its earliest
  end
end
local sizes = redis.call('HMGET', config, 'history_size', 'events_history_size')
local keep = tonumber(sizes[1]) or tonumber(ARGV[1])
local events_keep = tonumber(sizes[2]) or tonumber(ARGV[2])
local budget = tonumber(ARGV[3]) * added

local function forget(old, fields)
  for j = 1, #fields, 2 do
    if fields[j] == 'i' and redis.call('HGET', ids, fields[j + 1]) == old then
      redis.call('HDEL', ids, fields[j + 1])
    end
  end
  redis.call('XDEL', stream, old)
end

local function is_event(fields)
  for j = 1, #fields, 2 do
    if fields[j] == 'k' and fields[j + 1] == 'e' then return true end
  end
  return false
end

-- subscription events past their own budget, oldest first
local extra = redis.call('LLEN', events) - events_keep
while extra > 0 and budget > 0 do
  local old = redis.call('LPOP', events)
  local found = redis.call('XRANGE', stream, old, old)
  if #found > 0 then forget(old, found[1][2]) end
  extra, budget = extra - 1, budget - 1
end

-- updates past the history size: the oldest entries that are not events, found from
-- the cursor (every non-event entry up to it is gone), so each entry is scanned once
local over = redis.call('XLEN', stream) - redis.call('LLEN', events) - keep
local after = redis.call('GET', cursor)
local scan = budget * 4
while over > 0 and budget > 0 and scan > 0 do
  local low = '-'
  if after then low = '(' .. after end
  local batch = redis.call('XRANGE', stream, low, '+', 'COUNT', math.min(scan, over + 16))
  if #batch == 0 then
    after = false  -- entries below the cursor (added with explicit ids): rescan next time
    redis.call('DEL', cursor)
    break
  end
  for _, old in ipairs(batch) do
    scan = scan - 1
    after = old[1]
    if not is_event(old[2]) then
      forget(old[1], old[2])
      over, budget = over - 1, budget - 1
    end
    if over <= 0 or budget <= 0 or scan <= 0 then break end
  end
end
if after then redis.call('SET', cursor, after) end
return out
"""

#: KEYS: stream. ARGV: low, high (XRANGE bounds), most entries, byte budget.
READ = """
local low, high = ARGV[1], ARGV[2]
local rows, limit = tonumber(ARGV[3]), tonumber(ARGV[4])
local out, size, step = {}, 0, 1
while #out < rows do
  local want = math.min(step, rows - #out)
  local batch = redis.call('XRANGE', KEYS[1], low, high, 'COUNT', want)
  for _, entry in ipairs(batch) do
    out[#out + 1] = entry
    local fields = entry[2]
    for j = 1, #fields do size = size + #fields[j] end
    if size >= limit then return out end
  end
  if #batch < want then return out end
  low = '(' .. batch[#batch][1]
  step = math.max(1, math.floor((limit - size) * #out / math.max(size, 1)))
end
return out
"""

#: KEYS: config hash. ARGV: this node's history size, events size. Records the larger of
#: each (a node never lowers what others keep) and returns the sizes in force.
SIZES = """
local out = {}
for i, name in ipairs({'history_size', 'events_history_size'}) do
  local mine = tonumber(ARGV[i])
  local current = tonumber(redis.call('HGET', KEYS[1], name))
  if not current or current < mine then
    redis.call('HSET', KEYS[1], name, mine)
    current = mine
  end
  out[i] = current
end
return out
"""
