"""A worker's statistics in the Prometheus text format, served over HTTP on the engine's loop.

For operators who already run Prometheus and Grafana: each worker can answer
``GET /metrics`` on a configured port (loopback unless configured otherwise) with its
:class:`~core.engine.statistics.EngineStatistics` as gauges and counters, every sample carrying
the worker's labels (``worker``, ``host``). Rendering uses ``prometheus_client``'s exposition
code (text format 0.0.4: HELP and TYPE lines, label values escaped), from a collector that
reads one statistics snapshot per scrape; the server is a minimal ``asyncio`` HTTP/1.1 one on
the engine's own loop, so ``stats_fn`` is called where the engine lives and nothing blocks.

Names follow Prometheus conventions: ``shopfleet_`` prefix, base units in the name
(``_seconds``, ``_per_second``), ``_total`` on counters; windowed figures ("failed in the last
minute") are gauges, since the engine keeps them as sliding windows.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import re
from collections.abc import Callable, Iterator, Mapping
from urllib.parse import urlsplit

from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4, generate_latest
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from .config import is_loopback
from .engine.breakers import BreakerState
from .engine.statistics import EngineStatistics
from .errors import ConfigError

log = logging.getLogger(__name__)

CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4
"""``text/plain; version=0.0.4; charset=utf-8``."""
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 9464
PATH = "/metrics"

_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
_OWN_LABELS = frozenset({"band", "error_class", "platform", "gate", "breaker", "state"})
_MAX_REQUEST_BYTES = 16 * 1024
_REQUEST_TIMEOUT_S = 10.0


def _family(kind: type[GaugeMetricFamily] | type[CounterMetricFamily], name: str, doc: str,
            const: Mapping[str, str], labels: tuple[str, ...] = ()
            ) -> GaugeMetricFamily | CounterMetricFamily:
    return kind(f"shopfleet_{name}", doc, labels=[*const, *labels])


def families(stats: EngineStatistics, labels: Mapping[str, str] | None = None
             ) -> Iterator[Metric]:
    """The metric families of one statistics snapshot; ``labels`` go on every sample."""
    const = dict(labels or {})
    cv = list(const.values())

    def gauge(name: str, doc: str, value: float | None) -> Iterator[Metric]:
        g = _family(GaugeMetricFamily, name, doc, const)
        if value is not None:
            g.add_metric(cv, float(value))
        yield g

    def by(name: str, doc: str, label: str, values: Mapping[str, float]) -> Iterator[Metric]:
        g = _family(GaugeMetricFamily, name, doc, const, (label,))
        for key, value in sorted(values.items()):
            g.add_metric([*cv, str(key)], float(value))
        yield g

    s = stats
    yield from gauge("snapshot_timestamp_seconds", "When this statistics snapshot was taken.",
                     s.at)
    yield from gauge("tasks_running", "Tasks running on this worker.", s.running)
    yield from gauge("slots", "Tasks this worker runs at once at most.", s.slots)
    yield from gauge("tasks_queued", "Tasks waiting in the queue.", s.queued)
    yield from by("tasks_queued_by_band", "Queued tasks by priority band.", "band",
                  s.queued_by_band)
    yield from gauge("queue_score_spread", "Highest minus lowest score in the queue.",
                     s.score_spread)
    yield from gauge("tasks_over_hard_age", "Queued tasks past the hard-aging limit.",
                     s.over_hard_age)
    yield from gauge("queue_oldest_wait_seconds", "How long the oldest queued task has waited.",
                     s.oldest_wait_s)
    yield from gauge("tasks_done_last_minute", "Tasks this worker finished in the last minute.",
                     s.done_per_min)
    yield from gauge("tasks_failed_last_minute",
                     "Failed attempts on this worker in the last minute.", s.failed_per_min)
    yield from by("failures_last_minute", "Failed attempts in the last minute by error class.",
                  "error_class", s.failures_by_class)
    yield from by("failures_last_minute_by_platform",
                  "Failed attempts in the last minute by platform.", "platform",
                  s.failures_by_platform)
    yield from by("failures_last_hour", "Failed attempts in the last hour by error class.",
                  "error_class", s.failures_hour_by_class)
    yield from by("failures_last_hour_by_platform",
                  "Failed attempts in the last hour by platform.", "platform",
                  s.failures_hour_by_platform)
    yield from gauge("success_ratio_last_hour", "Share of attempts that succeeded in the last "
                     "hour (absent before the first attempt).", s.success_rate)
    yield from gauge("tickets_open", "Exception tickets waiting for a person.", s.open_tickets)
    yield from gauge("browsers_alive", "Live browsers in this worker's pool.", s.browsers_alive)
    yield from gauge("contexts_alive", "Live browser contexts in this worker's pool.",
                     s.contexts_alive)
    yield from gauge("preemptions_last_hour", "Preemptions in the last hour.",
                     s.preemptions_per_hour)
    yield from gauge("preemptions_refused_last_hour",
                     "Preemptions refused (storm limit) in the last hour.",
                     s.preemptions_refused_per_hour)
    yield from gauge("preemption_latency_p50_seconds",
                     "Median time from asking for a slot to getting it, last hour.",
                     s.preemption_latency_p50_s)
    yield from gauge("preemption_latency_p95_seconds",
                     "95th percentile time from asking for a slot to getting it, last hour.",
                     s.preemption_latency_p95_s)
    yield from gauge("resume_success_ratio_last_hour",
                     "Share of resumed tasks that then succeeded, last hour.",
                     s.resume_success_rate)
    yield from gauge("engine_problems", "Problems that stopped the engine (0 when healthy).",
                     len(s.problems))

    gate = {n: _family(GaugeMetricFamily, f"gate_{n}", d, const, ("gate",)) for n, d in (
        ("rate_per_second", "A rate gate's refill rate."),
        ("burst", "A rate gate's burst (bucket size)."),
        ("tokens", "Tokens in a rate gate's bucket now."),
        ("waiting", "Requests of this worker waiting at a rate gate."),
        ("held", "1 while a gate is held after a Retry-After."),
        ("held_until_timestamp_seconds", "When a held gate opens again."))}
    issued = _family(CounterMetricFamily, "gate_issued", "Tokens this worker took from a gate.",
                     const, ("gate",))
    waited = _family(CounterMetricFamily, "gate_wait_seconds",
                     "Seconds this worker's requests waited at a gate.", const, ("gate",))
    for lv in s.gates:
        lab = [*cv, lv.name]
        gate["rate_per_second"].add_metric(lab, lv.rate_per_s)
        gate["burst"].add_metric(lab, lv.burst)
        gate["tokens"].add_metric(lab, lv.tokens)
        gate["waiting"].add_metric(lab, lv.waiting)
        gate["held"].add_metric(lab, 0.0 if lv.held_until is None else 1.0)
        if lv.held_until is not None:
            gate["held_until_timestamp_seconds"].add_metric(lab, lv.held_until)
        issued.add_metric(lab, lv.issued)
        waited.add_metric(lab, lv.wait_s_total)
    yield from gate.values()
    yield issued
    yield waited

    state = _family(GaugeMetricFamily, "breaker_state",
                    "1 for a circuit breaker's current state, 0 for the others.", const,
                    ("breaker", "state"))
    brk = {n: _family(GaugeMetricFamily, f"breaker_{n}", d, const, ("breaker",)) for n, d in (
        ("recent_failures", "Site failures counted in the breaker's window."),
        ("trips", "Consecutive openings (sets the back-off)."),
        ("probe_in_flight", "1 while a half-open probe runs."),
        ("manual", "1 when an operator holds the breaker open."),
        ("next_probe_timestamp_seconds", "When an open breaker lets a probe through."))}
    for v in s.breakers:
        for st in BreakerState:
            state.add_metric([*cv, v.name, st.value], 1.0 if v.state is st else 0.0)
        lab = [*cv, v.name]
        brk["recent_failures"].add_metric(lab, v.recent_failures)
        brk["trips"].add_metric(lab, v.trips)
        brk["probe_in_flight"].add_metric(lab, float(v.probe_in_flight))
        brk["manual"].add_metric(lab, float(v.manual))
        if v.next_probe_at is not None:
            brk["next_probe_timestamp_seconds"].add_metric(lab, v.next_probe_at)
    yield state
    yield from brk.values()


def check_labels(labels: Mapping[str, str] | None) -> dict[str, str]:
    """Validate the worker's constant labels (names, and no clash with the metrics' own)."""
    out = dict(labels or {})
    for name in out:
        if not _LABEL_NAME.fullmatch(name) or name.startswith("__"):
            raise ValueError(f"invalid Prometheus label name {name!r}")
        if name in _OWN_LABELS:
            raise ValueError(f"label {name!r} is used by the metrics themselves")
    return out


class StatisticsCollector(Collector):
    """A ``prometheus_client`` collector that takes one snapshot from ``stats_fn`` per scrape."""

    def __init__(self, stats_fn: Callable[[], EngineStatistics],
                 labels: Mapping[str, str] | None = None) -> None:
        self.stats_fn = stats_fn
        self.labels = check_labels(labels)

    def collect(self) -> Iterator[Metric]:
        return families(self.stats_fn(), self.labels)


def render_metrics(stats: EngineStatistics, *, labels: Mapping[str, str] | None = None
                   ) -> bytes:
    """One snapshot in the Prometheus text format (0.0.4)."""
    return generate_latest(StatisticsCollector(lambda: stats, labels))


def _authorization(head: bytes) -> bytes:
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"authorization":
            return value.strip()
    return b""


def _response(status: str, body: bytes, content_type: str, *, extra: str = "") -> bytes:
    head = (f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\n{extra}"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n")
    return head.encode("ascii") + body


async def serve_metrics(stats_fn: Callable[[], EngineStatistics], *, host: str = DEFAULT_HOST,
                        port: int = DEFAULT_PORT, labels: Mapping[str, str] | None = None,
                        token: str = "") -> asyncio.Server:
    """Serve ``GET /metrics`` until the returned server is closed; anything else is a 404.

    Call it on the engine's loop: ``stats_fn`` (usually ``engine.statistics``) runs there, once
    per scrape. Binds to loopback unless ``host`` says otherwise (``port=0``: any free port, see
    ``server.sockets[0].getsockname()``). Off loopback a ``token`` is required: a scrape
    without ``Authorization: Bearer <token>`` gets 401.

    Raises:
        ConfigError: ``host`` is not loopback and there is no token, or ``port`` is out of
            range.
    """
    if not 0 <= port <= 65535:
        raise ConfigError("metrics.port", f"{port} is not a port number (0..65535)")
    if not is_loopback(host) and not token:
        raise ConfigError("metrics.token", f"required to serve metrics on {host!r}, which is "
                          "not a loopback address")
    collector = StatisticsCollector(stats_fn, labels)
    expected = f"Bearer {token}".encode()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            try:
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), _REQUEST_TIMEOUT_S)
            except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError):
                return  # not HTTP, too large, or too slow: just hang up
            parts = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ")
            if token and not hmac.compare_digest(_authorization(head), expected):
                reply = _response("401 Unauthorized", b"a bearer token is required\n",
                                  "text/plain; charset=utf-8",
                                  extra='WWW-Authenticate: Bearer realm="shopfleet"\r\n')
            elif len(parts) == 3 and parts[0] == "GET" and urlsplit(parts[1]).path == PATH:
                try:
                    reply = _response("200 OK", generate_latest(collector), CONTENT_TYPE)
                except Exception:  # a bug in a statistic must not take the worker down
                    log.exception("metrics: rendering failed")
                    reply = _response("500 Internal Server Error", b"rendering failed\n",
                                      "text/plain; charset=utf-8")
            else:
                reply = _response("404 Not Found", b"not found; try GET /metrics\n",
                                  "text/plain; charset=utf-8")
            writer.write(reply)
            await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    server = await asyncio.start_server(handle, host, port, limit=_MAX_REQUEST_BYTES)
    log.info("metrics on http://%s:%d%s", host, server.sockets[0].getsockname()[1], PATH)
    return server
