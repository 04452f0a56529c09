"""Key names of the Redis store, in one place (the layout is a stable interface).

Everything lives under one prefix ``P`` (default ``shopfleet``); a fleet may share a Redis with
other programs or run several fleets side by side with different prefixes. The Lua scripts in
:mod:`core.store.redis.store` build the very same names from the prefix (see ``_LUA_KEYS``
there); console queries and ``shopfleet migrate`` use the helpers here. A missing hash field
means SQL ``NULL``; numbers are stored as decimal text (Python ``repr`` or Lua ``%.17g``, both
round-trip exactly).

=============================== ======= ===========================================================
key                             type    content
=============================== ======= ===========================================================
``P:seq``                       hash    id counters: ``task``, ``shop``, ``event``, ``ticket``,
                                        ``kb``, ``rule``; ``room`` (bumped when queue room frees)
``P:meta``                      hash    name → value (settings kept in the store, snapshots;
                                        ``sort_indexes``: the version of ``P:sort:*``)
``P:shop:<id>``                 hash    id, name, platform, base_url, domain, username,
                                        password_enc (base64), paused (0/1), created_at,
                                        allowed_origins (JSON list),
                                        tags (#18: sorted JSON list); #17 shop profiles:
                                        profile (JSON, core.profiles.ShopProfile),
                                        proxy_password_enc (base64, vault-encrypted)
``P:shops``                     hash    shop name → id
``P:paused_domains``            hash    domain → JSON ``{"since": t, "reason": "…"}``
``P:task:<id>``                 hash    the SQLite ``tasks`` columns (shop_id, state, prio_key,
                                        band, spec JSON, checkpoint JSON, crashes,
                                        preempt_requested, evidence JSON, …)
``P:task:<id>:events``          list    the task's history, one JSON array a line:
                                        ``[event_id, at, from_state|null, to_state, reason]``
``P:task:<id>:tickets``         zset    the task's ticket ids (score = ticket id)
``P:idem``                      hash    idempotency key → task id
``P:q:ready``                   zset    queued tasks (also those whose ``not_before`` is still
                                        ahead, as SQLite's ``tasks_ready`` index); member =
                                        :func:`member` (zero-padded id), score = :func:`score`
``P:q:shop:<shop_id>``          zset    the same, per shop (claims when busy shops hold the top)
``P:q:suspended``               zset    suspended (preempted) tasks, same member and score
``P:q:sched``                   zset    #18: scheduled (delayed) tasks, score = not_before;
                                        the claim script promotes the due ones first
``P:schedule:<name>``           hash    #18: definition JSON, mark, paused (0/1), last_error,
                                        created_at, updated_at
``P:schedules``                 zset    #18: schedule names (score 0: by name)
``P:q:age``                     zset    band-0 queued tasks, score = queued_at (or created_at)
                                        (hard aging: the due ones are a range); member as
                                        in ``P:q:ready``
``P:q:sage``                    zset    the same for band-0 suspended tasks
``P:q:urgency``                 zset    queued tasks with an urgency re-estimate ahead,
                                        score = urgency_next_at (padded member)
``P:running``                   zset    running task id (plain, unpadded) → lease_until
``P:owner:<owner>``             set     ids of the tasks a lease owner (worker) holds
``P:ack_claim:<id>``            string  #20: JSON ``[owner, claimed id or "", its old state,
                                        claim time]`` of the ack-and-claim that acked task
                                        ``id``; expires after the claimed lease (a repeat
                                        after a lost reply)
``P:owners``                    set     lease owners holding at least one task
``P:shop_running``              hash    shop id → running tasks (shop exclusivity)
``P:state:<state>``             zset    task ids in that state (score = id): listing
``P:tasks``                     zset    every task id (score = id): listing
``P:shop_tasks:<shop_id>``      zset    all task ids of a shop (score = id): listing by shop
``P:sort:<state>:<sort>``       zset    #15: the tasks in that state in a console sort's order
                                        (history by finish time, type, shop, …): score 0,
                                        member = the sort values and id, encoded to sort by
                                        bytes (:mod:`core.store.redis.sorts`)
``P:counts``                    hash    state → number of tasks (kept by the same scripts)
``P:events``                    stream  the fleet's event log (``XADD … MAXLEN ~ 1000000``),
                                        fields ``id task at from to reason``
``P:ticket:<id>``               hash    the SQLite ``tickets`` columns (evidence JSON)
``P:tickets``                   zset    all ticket ids; ``P:tickets:<state>`` per state
``P:kb:<id>``                   hash    a knowledge-base answer (``kb_answers`` columns)
``P:kb``                        zset    all answer ids; ``P:kb:sig:<signature>`` per signature
``P:rule:<id>``                 hash    a rule (``rules`` columns)
``P:rules``                     zset    all rule ids; ``P:rules:sig:<signature>`` per signature
``P:metrics``                   zset    minute → minute (retention by range);
                                        ``P:metrics:data`` hash minute → JSON
``P:worker:<owner>``            hash    host, pid, slots, running, started_at, heartbeat_at,
                                        state (alive/stopped/lost), detail JSON
``P:workers``                   zset    owner → last heartbeat time
``P:outbox:targets``            set     notification targets with anything on record (#19)
``P:outbox:batches``            hash    claimed batch id → its target
``P:outbox:t:<target>:wait``    zset    unclaimed event ids, score = enqueued_at
``P:outbox:t:<target>:ev``      hash    event id → event JSON (unclaimed and claimed)
``P:outbox:t:<target>:seen``    zset    every event id enqueued, score = enqueued_at (refuses
                                        a duplicate; pruned after keep_days at each send)
``P:outbox:t:<target>:batch``   hash    the claimed batch: id, ids (JSON list), next_at,
                                        attempts
``P:outbox:t:<target>:health``  hash    failing_since, last_error, given_up, last_sent_at
=============================== ======= ===========================================================

Queue order: SQLite serves ``band DESC, prio_key DESC, id``. A sorted set orders by score,
then by member bytes, so the score is ``-(band·2^40 + prio_key)`` (ascending = best first;
exact in a double while ``|prio_key| < 2^39`` milli-points) and the member is the id padded
to 12 digits, so equal scores come out in submission order.
"""

from __future__ import annotations

BAND_SPAN = 2 ** 40
"""The score distance between hard-aging bands (prio_key stays well inside ±2^39)."""
ID_DIGITS = 12
TASK_STATES = ("queued", "scheduled", "running", "suspended", "waiting_human", "quarantined",
               "done", "failed", "cancelled")
TICKET_STATES = ("open", "answered", "closed", "cancelled")


def glob_escape(text: str) -> str:
    """``text`` as a literal in a ``SCAN MATCH`` pattern (a prefix's ``*?[]\\`` escaped)."""
    return "".join("\\" + ch if ch in "*?[]\\" else ch for ch in text)


def member(task_id: int) -> str:
    """A task's member in the queue sorted sets (zero-padded: ties sort by id)."""
    return f"{task_id:0{ID_DIGITS}d}"


def score(band: int, prio_key: int) -> float:
    """A task's score in the queue sorted sets (ascending = served first)."""
    return float(-(band * BAND_SPAN + prio_key))


class Keys:
    """Key names under one prefix: ``Keys("shopfleet").task(7) == "shopfleet:task:7"``."""

    def __init__(self, prefix: str = "shopfleet") -> None:
        self.prefix = prefix
        p = prefix
        self.seq = f"{p}:seq"
        self.meta = f"{p}:meta"
        self.shops = f"{p}:shops"
        self.paused_domains = f"{p}:paused_domains"
        self.idem = f"{p}:idem"
        self.ready = f"{p}:q:ready"
        self.suspended = f"{p}:q:suspended"
        self.scheduled = f"{p}:q:sched"
        self.age = f"{p}:q:age"
        self.sage = f"{p}:q:sage"
        self.urgency = f"{p}:q:urgency"
        self.running = f"{p}:running"
        self.owners = f"{p}:owners"
        self.tasks = f"{p}:tasks"
        self.shop_running = f"{p}:shop_running"
        self.counts = f"{p}:counts"
        self.events = f"{p}:events"
        self.tickets = f"{p}:tickets"
        self.kb = f"{p}:kb"
        self.rules = f"{p}:rules"
        self.metrics = f"{p}:metrics"
        self.metrics_data = f"{p}:metrics:data"
        self.workers = f"{p}:workers"

    def shop(self, shop_id: int | str) -> str:
        return f"{self.prefix}:shop:{shop_id}"

    def task(self, task_id: int | str) -> str:
        return f"{self.prefix}:task:{task_id}"

    def task_events(self, task_id: int | str) -> str:
        return f"{self.prefix}:task:{task_id}:events"

    def task_tickets(self, task_id: int | str) -> str:
        return f"{self.prefix}:task:{task_id}:tickets"

    def shop_queue(self, shop_id: int | str) -> str:
        return f"{self.prefix}:q:shop:{shop_id}"

    def shop_tasks(self, shop_id: int | str) -> str:
        return f"{self.prefix}:shop_tasks:{shop_id}"

    def owner(self, owner: str) -> str:
        return f"{self.prefix}:owner:{owner}"

    def ack_claim(self, task_id: int | str) -> str:
        return f"{self.prefix}:ack_claim:{task_id}"

    def state(self, state: str) -> str:
        return f"{self.prefix}:state:{state}"

    def ticket(self, ticket_id: int | str) -> str:
        return f"{self.prefix}:ticket:{ticket_id}"

    def tickets_in(self, state: str) -> str:
        return f"{self.prefix}:tickets:{state}"

    def kb_answer(self, answer_id: int | str) -> str:
        return f"{self.prefix}:kb:{answer_id}"

    def kb_sig(self, signature: str) -> str:
        return f"{self.prefix}:kb:sig:{signature}"

    def rule(self, rule_id: int | str) -> str:
        return f"{self.prefix}:rule:{rule_id}"

    def rules_sig(self, signature: str) -> str:
        return f"{self.prefix}:rules:sig:{signature}"

    def worker(self, owner: str) -> str:
        return f"{self.prefix}:worker:{owner}"

    # --- #19 notification outbox
    @property
    def outbox_targets(self) -> str:
        return f"{self.prefix}:outbox:targets"

    @property
    def outbox_batches(self) -> str:
        return f"{self.prefix}:outbox:batches"

    def outbox(self, target: str, part: str) -> str:
        """``part``: wait, ev, seen, batch or health."""
        return f"{self.prefix}:outbox:t:{target}:{part}"
