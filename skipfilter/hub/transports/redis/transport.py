"""The shared transport: one Redis Stream holds every node's updates in one total order.

A publish is appended with ``XADD`` (by a small Lua script that also indexes the update's
id for ``Last-Event-ID`` and trims the stream step by step, see ``redis_scripts``). Every
node tails the stream with ``XREAD`` and delivers what it reads, its own publishes
included, to its own subscribers: all nodes deliver the same updates in the same order. A
publish is acknowledged once this node has read it back and handed it to its fan-out, so
an acknowledged update is one this node delivers. An update's position is its stream id,
``(milliseconds, sequence)``.

What the stream holds is input: entries are decoded with the publish checks
(``redis_entries``) and an entry no hub could have written is skipped, with a warning.
Publishes that arrive together go to Redis as one group: one write, one script call.
Appends and the tail each have one connection of their own (``redis_lane``: replies
parsed and handed over inside the protocol, no task or pool per round trip); replays,
lookups and presence use redis-py's bounded pools, where requests that find every
connection busy (Redis paused, say) wait a little, then get a 503, instead of opening
more. When Redis is unreachable, or silent past a deadline, publishes fail with
TransportUnavailable (a 503) and nothing is acknowledged; the tail retries with backoff
and resumes after the last id it delivered.

Over a Sentinel set (``redis+sentinel://``, see ``redis_url``) every connection asks the
sentinels for the primary when it connects (a lane also checks ``ROLE``, and drops its
connection when a demoted primary answers ``READONLY``), so after a failover the tail and
the appends reach the new primary by themselves, the tail resuming after the last entry it
delivered. Replication is asynchronous, so with ``replicas=N`` (Sentinel's default 1) two
rules keep a failover from taking back what the hub said: an append's pipeline ends with
``WAIT N``, and a publish whose entry fewer than N replicas hold in time gets the 503 that
says it may or may not be stored; and the tail's ``XREAD`` is followed, in the same
pipeline, by a marker write and ``WAIT N``, and what it read is delivered only if the
replicas confirm: the replication stream is ordered, so a replica holding the marker holds
every entry read before it, and the three go on one connection, so the WAIT ran on the
server the entries came from. Nothing delivered, nor any id a subscriber resumes from, is
then only on a primary that a failover can lose.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from skipfilter.hub.transports.base import (
    Backlog,
    Deliver,
    Keep,
    Position,
    Transport,
    TransportUnavailable,
    no_backlog,
)
from skipfilter.hub.transports.redis import lane as redis_lane
from skipfilter.hub.transports.redis import scripts as redis_scripts
from skipfilter.hub.transports.redis import url as redis_url
from skipfilter.hub.transports.redis.acks import Acknowledgements
from skipfilter.hub.transports.redis.entries import (
    MAX_SID,
    MAX_STREAM_ID,
    TOKEN_FIELD,
    EntryReader,
    encode,
    stream_id,
    stream_position,
    topics_field,
)
from skipfilter.hub.transports.redis.failures import (
    agree_on_sizes,
    exhausted,
    reason_of,
    unreplicated,
    unsent,
)
from skipfilter.hub.transports.redis.lane import Lane
from skipfilter.hub.transports.redis.presence import RedisPresence
from skipfilter.hub.update import Entry, Update

log = logging.getLogger("skipfilter.hub")
#: Said of a failure after the script or the pipeline may have run: Redis keeps what it wrote.
MAYBE_STORED = "; the update may or may not have been stored"

#: Most entries per XREAD, bytes an XREAD should bring (its count adapts to the entries'
#: size), and how long one blocks (ms) before the tail checks in again.
_TAIL_COUNT = 512
_TAIL_BYTES = 4 << 20
_TAIL_BLOCK_MS = 1000
#: The tail stops reading while this many entries wait for fan-out on this node.
_BACKLOG = 4096
#: Old entries one append may trim (a lowered history size is reached step by step).
_TRIM_STEP = 64
#: Groups of appends on their way to Redis at once: the appends that arrive meanwhile wait
#: for an answer and go together (1 and 2 measured alike; fewer, larger writes win).
_IN_FLIGHT = 1
#: Most entries, and bytes of encoded updates (then the entry that passes them), that one
#: ``APPEND`` call stores: Redis runs nothing else during a call.
_CALL_ENTRIES, _CALL_BYTES = 256, 1 << 20
#: Connections per pool, and seconds a request waits for one before it is refused.
_WRITERS, _READERS, _POOL_WAIT = 4, 8, 2.0
#: Seconds stored updates may wait for this node's tail before health reports it stuck.
STUCK_AFTER = 10.0
#: Seconds a Redis of a Sentinel set may stay silent (beyond a WAIT's timeout) before a
#: connection to it is dropped and the sentinels are asked for the primary again.
_SENTINEL_TIMEOUT = 3.0


def _no_script(answer: Any) -> bool:
    """Whether Redis answered that it does not know the script (flushed, or restarted)."""
    return isinstance(answer, ResponseError) and str(answer).startswith("NOSCRIPT")


def _fields(flat: Any) -> Any:
    """An entry's field list as a dict, as the entry reader takes it (anything else as is:
    the reader says what is wrong with it)."""
    if isinstance(flat, list) and len(flat) % 2 == 0:
        return dict(zip(flat[::2], flat[1::2], strict=True))
    return flat


def _read_only(answer: Any) -> bool:
    """Whether Redis answered that it is a replica (a primary demoted by a failover)."""
    return isinstance(answer, ResponseError) and str(answer).startswith("READONLY")


def _stored_or_error(answer: Any) -> Any:
    """An entry's answer from ``APPEND``: its stream id, or Redis's refusal of its XADD."""
    if isinstance(answer, bytes) and answer.startswith(b"!"):
        return ResponseError(answer[1:].decode(errors="replace"))
    return answer


@dataclass(slots=True)
class _Append:
    updates: Sequence[Update]
    chunks: Sequence[bytes]
    done: asyncio.Future[Entry] | None
    events: bool


class RedisTransport(Transport):
    """Updates in the Redis Stream ``{prefix}:updates`` (``?prefix=`` in the URL, default
    ``skipfilter``), their ids in the hash ``{prefix}:ids``; the newest ``history_size``
    updates kept, and apart from them the newest ``events_history_size`` subscription
    events (listed in ``{prefix}:events``). The sizes are the cluster's: the largest any
    node asked for, recorded in ``{prefix}:config``."""

    def __init__(
        self, url: str, history_size: int = 100_000, events_history_size: int = 10_000
    ) -> None:
        self.target = target = redis_url.parse(url)
        self.url = target.url  # the password hidden (redis_url.redacted)
        self.shown = f"Redis at {self.url}"
        self.prefix = prefix = target.prefix
        self._replicas = target.replicas  # replicas that must hold an entry (0: none)
        self._replica_timeout = target.replica_timeout_ms
        self._marker = f"{prefix}:confirmed"  # what the tail writes to WAIT on
        self._unconfirmed = False  # the tail is waiting for replicas (said once)
        self._keys = redis_scripts.HistoryKeys.of(prefix)
        self._keep = history_size
        self._events_keep = events_history_size
        self._pending: list[_Append] = []
        self._flushing = False  # a flush of the pending appends is scheduled
        self._append_lane: Lane | None = None  # where appends go (redis_lane)
        self._tail_lane: Lane | None = None  # where the tail reads
        self._queued: list[list[_Append]] = []  # groups waiting for the append lane to open
        self._opening: asyncio.Task[None] | None = None  # opening the append lane
        self._sentinels = redis_url.sentinels(target) if target.sentinel else None
        # redis-py's annotations cannot say what decode_responses returns: Any
        self._client: Any = None  # appends, presence (text)
        self._reads: Any = None  # replay reads, lookups (bytes: entries are not trusted)
        self._tasks: list[asyncio.Task[None]] = []
        # set by start(): the loop served on, APPEND's SHA1 and READ as Redis knows them
        self._loop: asyncio.AbstractEventLoop | None = None
        self._append_sha: str | None = None
        self._read_script: Any = None  # a redis-py Script (untyped)
        self._deliver: Deliver | None = None
        self._entries = EntryReader(self._keys.updates)
        self._last = "0-0"  # the stream id of the newest entry read by the tail
        self._last_position = (0, 0)
        self._seq = 0
        self._entry_bytes = 1024.0  # running mean of entry sizes (sizes the tail's reads)
        self._acks = Acknowledgements()  # publishers waiting for this node's tail
        self._tail_seen_at = time.monotonic()  # the tail's last XREAD answer
        self.refusing: str | None = None  # why Redis refuses every append, when it does
        self.connected = False
        self.delivered = 0
        self._closing = False

    @property
    def _timeout(self) -> float:
        """Seconds Redis may take to answer (beyond an XREAD's block): a stopped primary
        answers nothing, so over Sentinel give up on it soon (a WAIT answers within its
        timeout) and ask the sentinels again."""
        wait = self._replica_timeout / 1000 if self._replicas else 0.0
        return (_SENTINEL_TIMEOUT if self.target.sentinel else 10.0) + wait

    def _reason(self, exc: BaseException) -> str:
        """What Redis (or redis-py) said, as it may be logged or answered: without the
        pipeline's commands (``reason_of``), nor this URL's secrets (``scrub``)."""
        return self.target.scrub(reason_of(exc))

    def _pool(self, size: int, decode: bool) -> Any:
        return redis_url.client(self.target, size, _POOL_WAIT, decode, self._timeout)

    async def start(
        self, loop: asyncio.AbstractEventLoop, deliver: Deliver, backlog: Backlog = no_backlog
    ) -> None:
        self.backlog = backlog
        self._deliver = deliver
        self._client = self._pool(_WRITERS, decode=True)
        self._reads = self._pool(_READERS, decode=False)
        self._read_script = self._reads.register_script(redis_scripts.READ)
        try:
            self._append_sha = await self._client.script_load(redis_scripts.APPEND)
            self._keep, self._events_keep = await agree_on_sizes(
                self._client, self._keys.config, self._keys.updates, self._keep, self._events_keep
            )
            held = True
            if self._replicas:  # resume ids and replays stop at an entry replicas hold
                async with self._reads.pipeline(transaction=False) as pipe:
                    pipe.xrevrange(self._keys.updates, "+", "-", count=2)
                    for command in self._confirmation():
                        pipe.execute_command(*command)
                    newest, *confirmation = await pipe.execute(raise_on_error=False)
                if isinstance(newest, BaseException):
                    raise newest
                held = self._confirmed(*confirmation)
            else:
                newest = await self._reads.xrevrange(self._keys.updates, "+", "-", count=2)
            if await self._exhausted():
                self.refusing = exhausted(self._keys.updates)  # the tail waits for the repair
            newest = [item for item in newest if item[0] != MAX_SID]  # nothing can follow it
            if newest and not held:
                raise TransportUnavailable(
                    f"fewer than {self._replicas} replicas of {self.url} hold its newest entry"
                )
        except (RedisError, OSError, TransportUnavailable) as exc:
            # a later start makes new clients
            for client in (self._client, self._reads):
                with contextlib.suppress(Exception):
                    await client.aclose()
            if isinstance(exc, TransportUnavailable):
                raise
            raise TransportUnavailable(
                f"Redis at {self.url} is unavailable: {self._reason(exc)}"
            ) from exc
        self.connected = True
        if newest:
            sid, _ = newest[0]
            self._last = sid.decode()
            self._last_position = self.start_position = stream_position(sid)
            found = await self._newest_usable(sid)
            if found is not None:
                self.last_id_at_start = found
        self._loop = loop
        self._tasks = [loop.create_task(self._tail_forever(), name="skipfilter-redis-tail")]

    async def _newest_usable(self, before: bytes) -> str | None:
        """The id of the newest usable update at or before stream id ``before``."""
        items = await self._reads.xrevrange(self._keys.updates, before, "-", count=64)
        for sid, fields in items:
            update = self._entries.update(sid, fields)
            if update is not None:
                return update.id
        return None

    # -- appends ------------------------------------------------------------------------

    def append(
        self,
        updates: Sequence[Update],
        chunks: Sequence[bytes],
        done: asyncio.Future[Entry] | None,
        events: bool = False,
    ) -> None:
        self._pending.append(_Append(updates, chunks, done, events))
        if not self._flushing:  # one group for every append of this turn of the loop
            self._flushing = True
            assert self._loop is not None, "append before start"
            self._loop.call_soon(self._flush)

    def _flush(self) -> None:
        """Send the appends of this turn as one group, or, while a group is on its way,
        keep them for when it is answered (``_stored``): under load the groups grow, and
        with them what one write and one script call carry. One connection, so Redis
        runs the groups in the order sent."""
        self._flushing = False
        group, self._pending = self._pending, []
        if not group:
            return
        lane = self._append_lane
        if lane is not None and lane.usable and not self._queued:
            if lane.waiting >= _IN_FLIGHT:  # sent when an answer comes: larger groups
                self._pending = group + self._pending
                return
            self._send(lane, group)
            return
        self._queued.append(group)
        if self._opening is None:
            assert self._loop is not None, "append before start"
            self._opening = self._loop.create_task(self._open_append_lane())

    async def _open_append_lane(self) -> None:
        """Open the append lane, then send the groups that waited for it, in order; when
        it cannot be opened, they were not stored."""
        try:
            self._append_lane = await self._reopen(self._append_lane)
        except (RedisError, OSError) as exc:
            queued, self._queued = self._queued, []
            for group in queued:
                self._fail_group(group, exc)
            return
        finally:
            self._opening = None
        queued, self._queued = self._queued, []
        for group in queued:
            self._send(self._append_lane, group)

    async def _reopen(self, old: Lane | None) -> Lane:
        """A new lane to the primary, ``old`` (if any) dropped first."""
        if old is not None:
            old.close()
        return await redis_lane.connect(self.target, self._sentinels)

    def _send(self, lane: Lane, group: list[_Append], again: bool = False) -> None:
        """Write a group's ``APPEND`` calls (a few hundred entries each) and, over a
        Sentinel set, a ``WAIT``; ``_stored`` handles the answers."""
        tokens = [self._acks.wait(job.done, job.updates[-1], job.chunks[-1]) for job in group]
        head = [self._keep, self._events_keep, _TRIM_STEP]
        commands: list[list[Any]] = []
        if again:  # Redis forgot the script (flushed, restarted): teach it first
            commands.append(["SCRIPT", "LOAD", redis_scripts.APPEND])
        counts = []
        for args, count in self._calls(group, tokens):
            commands.append(
                ["EVALSHA", self._append_sha, len(self._keys), *self._keys, *head, *args]
            )
            counts.append(count)
        if self._replicas:  # one WAIT for the group, on the connection that appended
            commands.append(["WAIT", self._replicas, self._replica_timeout])
        lane.send(
            commands,
            lambda replies: self._stored(lane, group, tokens, counts, replies, again),
            self._timeout,
        )

    def _stored(
        self,
        lane: Lane,
        group: list[_Append],
        tokens: list[bytes | None],
        counts: list[int],
        replies: Any,
        again: bool,
    ) -> None:
        """Resolve or fail each job of a group from Redis's answers."""
        if self._pending and not self._flushing:
            self._flush()  # what waited for this answer goes now
        if isinstance(replies, BaseException):
            self._acks.forget(tokens)
            self._fail_group(group, replies)
            return
        if again:
            replies = replies[1:]  # the SCRIPT LOAD
        elif any(_no_script(reply) for reply in replies):
            self._acks.forget(tokens)  # nothing of it ran: send it once more
            self._send(lane, group, again=True)
            return
        if any(_read_only(reply) for reply in replies):
            lane.close()  # a primary turned replica: the next group asks the sentinels
        self.connected = True
        self.commits += 1
        if self._replicas:
            held = replies.pop()
            if isinstance(held, BaseException) or int(held) < self._replicas:
                self._acks.forget(tokens)
                self._unreplicated(group, held)
                return
        sids: list[Any] = []
        for count, reply in zip(counts, replies, strict=True):
            # a call Redis refused as a whole fails each of its entries with its error
            sids += [reply] * count if isinstance(reply, BaseException) else reply
        results = iter(sids)
        refused: list[_Append] = []
        error: BaseException | None = None
        for job, token in zip(group, tokens, strict=True):
            answers = [_stored_or_error(next(results)) for _ in job.updates]
            for sid in answers:
                if isinstance(sid, BaseException):
                    error = sid
            if answers and not any(isinstance(sid, BaseException) for sid in answers):
                self._acks.stored(token, stream_position(answers[-1]))
            else:
                refused.append(job)
                self._acks.forget([token])
        if error is not None:
            self._fail_group(refused, error)
        else:
            self.refusing = None

    def _calls(
        self, group: list[_Append], tokens: list[bytes | None]
    ) -> list[tuple[list[Any], int]]:
        """The ``APPEND`` calls storing ``group`` in order (a job never split between two),
        each as its arguments and its number of entries."""
        calls: list[tuple[list[Any], int]] = []
        args: list[Any] = []
        count = size = 0
        for job, token in zip(group, tokens, strict=True):
            if count and (count >= _CALL_ENTRIES or size >= _CALL_BYTES):
                calls.append((args, count))
                args, count, size = [], 0, 0
            kind = "e" if job.events else "u"
            last = len(job.updates) - 1
            for i, update in enumerate(job.updates):
                encoded = encode(update)
                tail = token if i == last and token else b""
                args += [encoded, update.id, topics_field(update), kind, tail]
                count += 1
                size += len(encoded)
        if count:
            calls.append((args, count))
        return calls

    def _unreplicated(self, group: list[_Append], held: Any) -> None:
        """Fail the publishers of ``group``: the primary has their updates, too few replicas
        confirmed them, and a failover now would lose them (or not)."""
        reason = unreplicated(held, self._replicas, self._replica_timeout)
        count = sum(len(job.updates) for job in group)
        log.error("redis transport: %d updates not acknowledged: %s", count, reason)
        failure = TransportUnavailable(reason)
        for job in group:
            if job.done is not None and not job.done.done():
                job.done.set_exception(failure)

    def _fail_group(self, group: list[_Append], exc: BaseException) -> None:
        """Fail every publisher of ``group`` with the cause, never another one's update."""
        reason = self._reason(exc)
        if "exhausted the last possible ID" in reason:
            reason = self.refusing = exhausted(self._keys.updates)
        elif isinstance(exc, RedisConnectionError | RedisTimeoutError | OSError):
            self.connected = False
            if not unsent(exc):  # lost after the pipeline went: Redis may have run it
                reason += MAYBE_STORED
        elif isinstance(exc, ResponseError) and " script: " in str(exc):
            # an error raised while the script ran: Redis keeps what it wrote before it
            reason += MAYBE_STORED
        failure = TransportUnavailable(f"the Redis transport is unavailable: {reason}")
        count = sum(len(job.updates) for job in group)
        outcome = "failed" if reason.endswith(MAYBE_STORED) else "not stored"
        log.error("redis transport: %d updates %s: %s", count, outcome, reason)
        for job in group:
            if job.done is not None and not job.done.done():
                job.done.set_exception(failure)

    async def _exhausted(self) -> bool:
        """Whether the stream's last id is the largest possible (no entry can follow)."""
        try:
            info = await self._client.xinfo_stream(self._keys.updates)
        except ResponseError:  # no such stream (yet)
            return False
        return bool(info.get("last-generated-id") == MAX_STREAM_ID)

    # -- the tail -----------------------------------------------------------------------

    async def _tail_forever(self) -> None:
        pause = 0.05
        while not self._closing:
            try:
                await self._tail_once()
            except (RedisError, OSError) as exc:
                if self._closing:  # redis-py may turn our cancellation into an error
                    return
                if self.connected:
                    log.error("redis transport: tail lost Redis (%s); retrying", self._reason(exc))
                self.connected = False
                await asyncio.sleep(pause)
                pause = min(2.0, pause * 2)
                continue
            except Exception:  # a bug must not stop delivery for good: say so, go on
                log.exception("redis transport: the tail failed after %s; retrying", self._last)
                await asyncio.sleep(pause)
                pause = min(2.0, pause * 2)
                continue
            pause = 0.05

    async def _tail_once(self) -> None:
        assert self._deliver is not None
        if self.refusing is not None:  # nothing can be added: wait for the repair
            self._tail_seen_at = time.monotonic()
            await asyncio.sleep(_TAIL_BLOCK_MS / 1000)
            if await self._exhausted():
                return
            self.refusing = None
        while self.backlog() > _BACKLOG:
            self._tail_seen_at = time.monotonic()  # waiting for fan-out, not stuck
            await asyncio.sleep(0.01)
        count = max(1, min(_TAIL_COUNT, int(_TAIL_BYTES / self._entry_bytes)))
        read = ["XREAD", "COUNT", count, "BLOCK", _TAIL_BLOCK_MS, "STREAMS", self._keys.updates]
        commands = [[*read, self._last], *self._confirmation()]
        lane = self._tail_lane
        if lane is None or not lane.usable:
            lane = self._tail_lane = await self._reopen(lane)
        answer, *confirmation = await lane.call(commands, _TAIL_BLOCK_MS / 1000 + self._timeout)
        if isinstance(answer, BaseException):
            raise answer
        held = self._confirmed(*confirmation) if confirmation else True
        self._tail_seen_at = time.monotonic()
        if not self.connected:
            log.warning("redis transport: tail reconnected after %s", self._last)
        self.connected = True
        if not held:
            return  # read them again, from the last entry delivered (the WAIT paced this)
        items = [item for _, batch in answer or () for item in batch]
        if items:
            self._hand_out(items)
        self._acks.passed(self._last_position)

    def _confirmation(self) -> list[list[Any]]:
        """Commands that follow a read of the stream on its connection, so one server:
        a marker write and ``WAIT`` (nothing without replicas to wait for). The
        replication stream is ordered, so replicas holding the marker hold everything
        the read returned."""
        if not self._replicas:
            return []
        return [["SET", self._marker, "1"], ["WAIT", self._replicas, self._replica_timeout]]

    def _confirmed(self, marked: Any, held: Any) -> bool:
        """Whether ``replicas`` replicas hold what the read before the marker returned."""
        said = marked if isinstance(marked, BaseException) else held
        if not isinstance(said, BaseException) and int(said) >= self._replicas:
            if self._unconfirmed:
                log.warning("redis transport: replicas confirm entries again")
            self._unconfirmed = False
            return True
        if not self._unconfirmed:
            log.warning(
                "redis transport: entries after %s wait for %d replicas (%s)",
                self._last,
                self._replicas,
                self._reason(said) if isinstance(said, BaseException) else f"{said} confirmed",
            )
        self._unconfirmed = True
        return False

    def _hand_out(self, items: list[list[Any]]) -> None:
        """Deliver what the tail read (stream ids and field lists), in order, resolving the
        publishers who wait. An entry ending with the token of a publisher waiting here
        is this node's own append: its update and event bytes are the ones sent, neither
        decoded nor checked again. Others are decoded when someone here receives them
        (``EntryReader.lazy``)."""
        assert self._deliver is not None
        run: list[Entry] = []
        lazy, acks, seq = self._entries.lazy, self._acks, self._seq
        last = None  # the stream id of the last entry read (usable or not)
        for sid, flat in items:
            if sid == MAX_SID:  # nothing can follow it: stay before it until repaired
                self.refusing = exhausted(self._keys.updates)
                self._entries.entry(sid, _fields(flat))  # reported once, never delivered
                break
            last = sid
            position = self._last_position = stream_position(sid)
            waiter = None
            if isinstance(flat, list) and len(flat) > 1 and flat[-2] == TOKEN_FIELD:
                waiter = acks.read(flat[-1])  # APPEND writes the token last
            entry: Entry | None
            if waiter is not None:
                entry = Entry(seq + 1, waiter.update, waiter.chunk, position=position)
            else:
                entry = lazy(sid, flat, seq + 1, position)
            if entry is None:
                continue
            seq += 1
            run.append(entry)
            if waiter is not None:
                self._handed(run, waiter.done, seq, sid)
                run = []
        if last is not None:
            self._last = last.decode()
        if run:
            self._handed(run, None, seq, last)

    def _handed(
        self, run: list[Entry], done: asyncio.Future[Entry] | None, seq: int, sid: Any
    ) -> None:
        """Deliver ``run`` (the entries up to ``seq`` and stream id ``sid``)."""
        assert self._deliver is not None
        self._seq = seq
        self._last = sid.decode()
        self.delivered += len(run)
        self._entry_bytes += (sum(e.size for e in run) / len(run) - self._entry_bytes) / 16
        self._deliver(run, done)

    # -- reads --------------------------------------------------------------------------

    async def read(
        self,
        after: Position | None,
        before: Position | None,
        upto: Position | None,
        max_rows: int,
        max_bytes: int,
        keep: Keep | None = None,  # every row comes back whole: its data is in one field
    ) -> list[Entry]:
        """Stored entries in the range (see Transport.read), skipping unusable ones: at
        least one unless none is left in the range, and at most ``max_bytes`` (plus one
        entry) brought from Redis."""
        assert self._reads is not None
        low = f"({stream_id(after)}" if after is not None else "-"
        high = "+"
        if before is not None:
            high = f"({stream_id(before)}"
        if upto is not None and (before is None or upto < before):
            high = stream_id(upto)
        while True:
            try:
                items = await self._read_script(
                    keys=[self._keys.updates], args=[low, high, max_rows, max_bytes]
                )
            except (RedisError, OSError) as exc:
                raise TransportUnavailable(
                    f"the Redis transport is unavailable: {self._reason(exc)}"
                ) from exc
            if not items:
                return []  # nothing (usable) left in the range
            entries = []
            for sid, flat in items:
                entry = self._entries.entry(sid, _fields(flat))
                if entry is not None:
                    entries.append(entry)
            if entries:
                return entries
            low = "(" + items[-1][0].decode()  # a run of unusable entries: read on past it

    async def lookup(self, update_id: str) -> Entry | None:
        assert self._reads is not None
        try:
            sid = await self._reads.hget(self._keys.ids, update_id)
            if sid is None:
                return None
            items = await self._reads.xrange(self._keys.updates, sid, sid, count=1)
        except (RedisError, OSError) as exc:
            raise TransportUnavailable(
                f"the Redis transport is unavailable: {self._reason(exc)}"
            ) from exc
        if not items:
            return None
        found, fields = items[0]
        return self._entries.entry(found, fields)

    async def count(self) -> int:
        assert self._client is not None
        return int(await self._client.xlen(self._keys.updates))

    # -- health -------------------------------------------------------------------------

    def problem(self) -> str | None:
        """Why this node cannot deliver what it stores (None: it can)."""
        if self._closing:
            return None
        if self.refusing is not None:
            return self.refusing
        dead = [t for t in self._tasks if t.done()]
        if dead:
            return f"the Redis {dead[0].get_name().rsplit('-', 1)[-1]} task has stopped"
        now = time.monotonic()
        waiting = self._acks.stuck(STUCK_AFTER)
        if waiting is not None:
            return f"{waiting} (at {self._last})"
        if self.connected and now - self._tail_seen_at > STUCK_AFTER:
            return f"the Redis tail has not read for {now - self._tail_seen_at:.0f} s"
        return None

    async def check(self) -> str | None:
        """``problem()``, after asking Redis again whether it still refuses appends."""
        if self.refusing is not None:
            with contextlib.suppress(RedisError, OSError):
                if not await self._exhausted():
                    self.refusing = None
        return self.problem()

    # -- the end ------------------------------------------------------------------------

    async def close(self) -> None:
        self._closing = True
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._flush()  # what was accepted is sent, and answered
        deadline = time.monotonic() + self._timeout
        while self._opening is not None or (
            self._append_lane is not None and not self._append_lane.idle
        ):
            if time.monotonic() > deadline:
                break
            await asyncio.sleep(0.01)
        left, self._queued = [g for g in (*self._queued, self._pending) if g], []
        self._pending = []
        for group in left:  # no lane could be opened in time: nothing of them was sent
            self._fail_group(group, RedisConnectionError("Error connecting: the hub stopped"))
        self._acks.fail_all("the hub stopped before delivering it")
        for lane in (self._append_lane, self._tail_lane):
            if lane is not None:
                lane.close()
        for client in (self._client, self._reads):
            if client is not None:
                with contextlib.suppress(Exception):
                    await client.aclose()
                    await client.connection_pool.disconnect()

    def presence(
        self,
        publish: Callable[[Sequence[Update]], None],
        make_update: Callable[[dict[str, Any]], Update],
        ttl: float,
    ) -> RedisPresence:
        """Subscriptions of every node, in Redis next to the stream (call after ``start``)."""
        return RedisPresence(self._client, self.prefix, publish, make_update, ttl)

    def stats(self) -> dict[str, Any]:
        """Counters for metrics."""
        return {
            "connected": self.connected,
            "delivered": self.delivered,
            "last": self._last,
            "skipped": self._entries.skipped,
        }
