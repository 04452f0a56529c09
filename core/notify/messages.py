"""What an alert says: events, the message catalogue (zh_CN, en), coalescing, the digest.

The engine turns what happened into a :class:`NotifyEvent` (a ticket opened, a shop's task
quarantined, a breaker opened, a worker lost, a schedule failed) and only *enqueues* it. The
dispatcher later turns all due events of one target into **one** :class:`Message` with
:func:`coalesce`: events with the same kind and headline are one line with a count and the
shops they hit, so a 5xx storm over 50 shops reads "50 shops · ticket: SiteFailed 502 …", not
fifty messages. A message's id is derived from its events' ids, so the same batch resent after
a crash carries the same id (at-least-once, deduplicable by the receiver).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

MAX_LINES = 10

CATALOGUE: dict[str, dict[str, str]] = {
    "en": {
        "ticket": "Ticket #{ticket} · {shop}: {headline}",
        "quarantine": "Quarantined task #{task} · {shop}: {headline}",
        "breaker_open": "Breaker open on {domain}: {headline}",
        "worker_lost": "Worker lost: {worker} {headline}",
        "schedule_failed": "Schedule {schedule} failed: {headline}",
        "digest": "{headline}",
        "kind.ticket": "tickets",
        "kind.quarantine": "quarantined",
        "kind.breaker_open": "breakers open",
        "kind.worker_lost": "workers lost",
        "kind.schedule_failed": "schedules failed",
        "kind.digest": "digests",
        "title.one": "ShopFleet: {line}",
        "title.many": "ShopFleet: {n} alerts from {shops} shops",
        "group": "{count} shops · {kind}: {headline} ({sample})",
        "group.noshop": "{count}× {kind}: {headline}",
        "more": "… and {n} more",
        "test": "ShopFleet test message to {target}: notifications reach this chat.",
        "digest.title": "ShopFleet daily digest {day}",
        "digest.totals": "Tasks: {done} done, {failed} failed, {queued} queued · "
                         "tickets open: {tickets}",
        "digest.shop": "{shop}: {done} done, {failed} failed, {tickets} tickets",
        "digest.signatures": "Top failures:",
        "digest.signature": "{count}× {signature}",
        "footer": "id {id}",
    },
    "zh_CN": {
        "ticket": "工单 #{ticket} · {shop}：{headline}",
        "quarantine": "任务 #{task} 已隔离 · {shop}：{headline}",
        "breaker_open": "熔断已打开：{domain}：{headline}",
        "worker_lost": "工作节点失联：{worker} {headline}",
        "schedule_failed": "计划 {schedule} 失败：{headline}",
        "digest": "{headline}",
        "kind.ticket": "工单",
        "kind.quarantine": "隔离",
        "kind.breaker_open": "熔断",
        "kind.worker_lost": "节点失联",
        "kind.schedule_failed": "计划失败",
        "kind.digest": "日报",
        "title.one": "ShopFleet：{line}",
        "title.many": "ShopFleet：{n} 条告警，涉及 {shops} 个店铺",
        "group": "{count} 个店铺 · {kind}：{headline}（{sample}）",
        "group.noshop": "{count} 次 · {kind}：{headline}",
        "more": "……另有 {n} 条",
        "test": "ShopFleet 测试消息（{target}）：通知已能送达本群。",
        "digest.title": "ShopFleet 每日汇总 {day}",
        "digest.totals": "任务：完成 {done}，失败 {failed}，排队 {queued} · 未结工单：{tickets}",
        "digest.shop": "{shop}：完成 {done}，失败 {failed}，工单 {tickets}",
        "digest.signatures": "主要失败：",
        "digest.signature": "{count} 次 {signature}",
        "footer": "编号 {id}",
    },
}


def say(lang: str, key: str, **values: Any) -> str:
    """A catalogue text in ``lang`` (falls back to English) with ``values`` filled in."""
    text = CATALOGUE.get(lang, CATALOGUE["en"]).get(key) or CATALOGUE["en"][key]
    return text.format_map(_Default(values))


class _Default(dict[str, Any]):
    def __missing__(self, key: str) -> str:
        return ""


def _clean(text: Any, limit: int = 300) -> str:
    """One line of at most ``limit`` chars: event text is hostile (a ticket's error)."""
    s = " ".join(str(text).split())
    return s if len(s) <= limit else s[: limit - 1] + "…"


@dataclass(frozen=True, slots=True)
class NotifyEvent:
    """Something that happened that a person may need to hear of.

    ``id`` is unique per event (e.g. ``ticket:42``); ``detail`` fills the catalogue's
    placeholders (``ticket``, ``task``, ``domain``, ``worker``, ``schedule``). ``screenshot``
    is the path of a ticket's masked screenshot (kept in the outbox, never put in a message:
    only its bytes go, to targets that opted in).
    """

    id: str
    kind: str
    at: float
    headline: str = ""
    shop: str = ""
    platform: str = ""
    detail: Mapping[str, str | int] = field(default_factory=dict)
    screenshot: str = ""

    def line(self, lang: str) -> str:
        if self.kind == "digest":  # the digest is several lines on purpose
            return "\n".join(_clean(x) for x in str(self.headline).splitlines()[:60])
        return _clean(say(lang, self.kind, shop=self.shop, headline=_clean(self.headline),
                          **{k: _clean(v, 80) for k, v in self.detail.items()}))

    def as_json(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "at": self.at, "headline": self.headline,
                "shop": self.shop, "platform": self.platform, "detail": dict(self.detail)}


@dataclass(frozen=True, slots=True)
class Message:
    """One message to one target: a title, plain text, markdown, and the events it carries."""

    id: str
    title: str
    text: str
    markdown: str
    events: tuple[NotifyEvent, ...]
    lang: str
    counts: Mapping[str, int]


def message_id(events: Sequence[NotifyEvent]) -> str:
    """A stable id for a batch: the same events give the same id, in any order."""
    h = hashlib.sha256("\n".join(sorted(e.id for e in events)).encode()).hexdigest()
    return h[:24]


def coalesce(events: Sequence[NotifyEvent], lang: str) -> Message:
    """One message for a batch of events (at least one) for one target."""
    if not events:
        raise ValueError("coalesce needs at least one event")
    counts = Counter(e.kind for e in events)
    mid = message_id(events)
    if len(events) == 1:
        line = events[0].line(lang)
        title = _clean(say(lang, "title.one", line=line), 120)
        body = [line]
    else:
        shops = {e.shop for e in events if e.shop}
        title = say(lang, "title.many", n=len(events), shops=len(shops))
        summary = ", ".join(f"{n} {say(lang, 'kind.' + k)}" for k, n in counts.most_common())
        groups: dict[tuple[str, str], list[NotifyEvent]] = {}
        for e in events:
            groups.setdefault((e.kind, _clean(e.headline, 120)), []).append(e)
        ordered = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[1][0].at))
        body = [summary]
        for (kind, headline), evs in ordered[:MAX_LINES]:
            if len(evs) == 1:
                body.append(evs[0].line(lang))
                continue
            names = sorted({e.shop for e in evs if e.shop})
            if names:
                sample = ", ".join(names[:3]) + (" …" if len(names) > 3 else "")
                body.append(say(lang, "group", count=len(names), kind=say(lang, "kind." + kind),
                                headline=headline, sample=sample))
            else:
                body.append(say(lang, "group.noshop", count=len(evs),
                                kind=say(lang, "kind." + kind), headline=headline))
        if len(ordered) > MAX_LINES:
            body.append(say(lang, "more", n=sum(len(v) for _, v in ordered[MAX_LINES:])))
    footer = say(lang, "footer", id=mid)
    text = "\n".join([*([title] if len(events) > 1 else []), *body, footer])
    md = "\n".join([f"### {title}", *(f"- {b}" for b in body), f"\n{footer}"])
    return Message(id=mid, title=title, text=text, markdown=md, events=tuple(events),
                   lang=lang, counts=dict(counts))


def notify_test_message(target: str, lang: str, *, at: float) -> Message:
    """The message ``shopfleet notify test NAME`` sends."""
    line = say(lang, "test", target=target)
    ev = NotifyEvent(id=f"test:{target}:{at:.3f}", kind="digest", at=at, headline=line)
    return coalesce([ev], lang)


@dataclass(frozen=True, slots=True)
class ShopCounts:
    """One shop's counts for the digest."""

    shop: str
    done: int = 0
    failed: int = 0
    tickets: int = 0


@dataclass(frozen=True, slots=True)
class CountsSnapshot:
    """What the store counts for a day (stage 2 fills it with one query per store)."""

    day_start: float
    shops: Sequence[ShopCounts]
    queued: int
    tickets_open: int
    signatures: Sequence[tuple[str, int]]  # (failure signature, count), any order


def digest_event(snap: CountsSnapshot, lang: str, *, top: int = 5, max_shops: int = 20
                 ) -> NotifyEvent:
    """The daily digest as one event (its id is the day, so a resent digest is the same)."""
    day = datetime.fromtimestamp(snap.day_start, UTC).strftime("%Y-%m-%d")
    done = sum(s.done for s in snap.shops)
    failed = sum(s.failed for s in snap.shops)
    lines = [say(lang, "digest.title", day=day),
             say(lang, "digest.totals", done=done, failed=failed, queued=snap.queued,
                 tickets=snap.tickets_open)]
    worst = sorted(snap.shops, key=lambda s: (-(s.failed + s.tickets), -s.done, s.shop))
    for s in worst[:max_shops]:
        lines.append(say(lang, "digest.shop", shop=_clean(s.shop, 60), done=s.done,
                         failed=s.failed, tickets=s.tickets))
    if len(worst) > max_shops:
        lines.append(say(lang, "more", n=len(worst) - max_shops))
    sigs = sorted(snap.signatures, key=lambda kv: (-kv[1], kv[0]))[:top]
    if sigs:
        lines.append(say(lang, "digest.signatures"))
        lines.extend(say(lang, "digest.signature", count=n, signature=_clean(sig, 120))
                     for sig, n in sigs)
    return NotifyEvent(id=f"digest:{day}", kind="digest", at=snap.day_start,
                       headline="\n".join(lines))
