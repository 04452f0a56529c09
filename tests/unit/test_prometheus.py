"""Prometheus exposition: a real engine's statistics, rendered, parsed line by line, served."""

from __future__ import annotations

import asyncio
import dataclasses
import re
import socket
import urllib.error
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from core.engine import Engine, EngineStatistics, NoopExecutor
from core.metrics_http import CONTENT_TYPE, render_metrics, serve_metrics
from core.testing import FakeClock
from tests.conftest import StoreFactory
from tests.helpers import spec

NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
LABEL_VALUE = r'"((?:[^"\\\n]|\\[\\"n])*)"'
SAMPLE = re.compile(rf"""
    (?P<name>[^{{\s]+)
    (?:\{{(?P<labels>(?:[^=,{{}}\s]+={LABEL_VALUE},?)*)\}})?
    \ (?P<value>\S+)(?:\ (?P<ts>-?\d+))?$""", re.X)
PAIR = re.compile(rf"([^=,]+)={LABEL_VALUE},?")

WORKER = {"worker": 'w"1\\east\nrack', "host": "box-1"}   # values that need escaping
ODD_CLASS = 'Site"Failed\\x\ny'


def unescape(v: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n"}.get(m.group(1), m.group(1)), v)


def parse(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Check the text format line by line; return {(name, sorted labels): value}."""
    types: dict[str, str] = {}
    helps: set[str] = set()
    samples: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    assert text.endswith("\n")
    for line in text.splitlines():
        if line.startswith("# HELP "):
            name = line.split(" ")[2]
            assert NAME.fullmatch(name), line
            helps.add(name)
        elif line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            assert NAME.fullmatch(name) and kind in {"gauge", "counter"}, line
            assert name not in types, f"second TYPE for {name}"
            assert name in helps, f"TYPE before HELP for {name}"
            types[name] = kind
        else:
            m = SAMPLE.match(line)
            assert m, f"not a sample line: {line!r}"
            name = m["name"]
            assert NAME.fullmatch(name), line
            family = name.removesuffix("_total") if types.get(
                name.removesuffix("_total")) == "counter" else name
            assert family in types, f"sample {name} has no TYPE before it"
            if types[family] == "counter":
                assert name.endswith("_total"), line
            labels = tuple(sorted((k, unescape(v)) for k, v in PAIR.findall(m["labels"] or "")))
            for k, _ in labels:
                assert LABEL_NAME.fullmatch(k) and not k.startswith("__"), line
            assert len({k for k, _ in labels}) == len(labels), line
            float(m["value"])
            key = (name, labels)
            assert key not in samples, f"duplicate sample {line}"
            samples[key] = float(m["value"])
    return samples


def engine_statistics(make_store: StoreFactory, clock: FakeClock) -> EngineStatistics:
    """A real engine (no-op executor, SQLite store) that ran a few tasks, with a held gate and
    an open breaker."""
    store = make_store(breakers={"failures": 2})
    settings = store.settings.with_changes(gates={
        "global": {"rate_per_s": 1e6, "burst": 1e6},
        "default_domain": {"rate_per_s": 1e6, "burst": 1e6}})
    engine = Engine(store, settings, executor=NoopExecutor(clock=clock), slots=2, clock=clock)
    store.submit_many([spec("collect_data", shop) for shop in ("pdd-1", "pdd-2", "temu-1")])

    async def go() -> EngineStatistics:
        async with engine:
            await engine.run_until_idle()
            engine.gates.hold("pdd.shopfleet.test", 30)
            for _ in range(2):
                engine.breakers.get("temu.shopfleet.test").record_failure()
            return engine.statistics()

    return asyncio.run(go())


def test_statistics_render_as_valid_exposition_text(make_store: StoreFactory,
                                                    clock: FakeClock) -> None:
    stats = engine_statistics(make_store, clock)
    stats = dataclasses.replace(stats, failures_by_class={ODD_CLASS: 2, "PageChanged": 1})
    text = render_metrics(stats, labels=WORKER).decode()
    samples = parse(text)
    w = tuple(WORKER.items())

    def value(name: str, *labels: tuple[str, str]) -> float:
        return samples[(name, tuple(sorted(w + labels)))]

    assert value("shopfleet_slots") == 2
    assert value("shopfleet_tasks_done_last_minute") == 3
    assert value("shopfleet_tasks_queued") == stats.queued     # (refreshed each second)
    assert value("shopfleet_failures_last_minute", ("error_class", ODD_CLASS)) == 2
    assert value("shopfleet_gate_held", ("gate", "pdd.shopfleet.test")) == 1
    assert value("shopfleet_gate_held_until_timestamp_seconds",
                 ("gate", "pdd.shopfleet.test")) == pytest.approx(clock.now() + 30)
    assert value("shopfleet_gate_issued_total", ("gate", "*")) == 3
    temu = ("breaker", "temu.shopfleet.test")
    assert value("shopfleet_breaker_state", temu, ("state", "open")) == 1
    assert value("shopfleet_breaker_state", temu, ("state", "closed")) == 0
    assert value("shopfleet_breaker_trips", temu) == 1
    # every sample carries the worker's labels, escaped as the format says
    assert all(dict(k[1]).items() >= WORKER.items() for k in samples)
    assert 'worker="w\\"1\\\\east\\nrack"' in text
    # an unknown value (no attempt yet, no preemption) is left out, not written as 0 or NaN
    assert not any(k[0] == "shopfleet_preemption_latency_p50_seconds" for k in samples)
    # and the reference parser agrees
    parsed = {f.name: f for f in text_string_to_metric_families(text)}
    assert parsed["shopfleet_gate_issued"].type == "counter"
    odd = [s for s in parsed["shopfleet_failures_last_minute"].samples
           if s.labels["error_class"] == ODD_CLASS]
    assert [s.value for s in odd] == [2.0]


def test_bad_worker_labels_are_refused(make_store: StoreFactory, clock: FakeClock) -> None:
    stats = engine_statistics(make_store, clock)
    with pytest.raises(ValueError, match="label"):
        render_metrics(stats, labels={"gate": "x"})
    with pytest.raises(ValueError, match="label"):
        render_metrics(stats, labels={"9lives": "x"})


def fetch(url: str) -> tuple[int, str, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.headers["Content-Type"], r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers["Content-Type"], e.read().decode()


def raw(port: int, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(request)
        s.shutdown(socket.SHUT_WR)   # the request is complete (or, for garbage, never will be)
        chunks = []
        while chunk := s.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_serves_metrics_on_loopback(make_store: StoreFactory, clock: FakeClock) -> None:
    stats = engine_statistics(make_store, clock)
    scrapes = 0

    def stats_fn() -> EngineStatistics:
        nonlocal scrapes
        scrapes += 1
        return stats

    async def go() -> None:
        server = await serve_metrics(stats_fn, port=0, labels={"worker": "w1"})
        try:
            host, port = server.sockets[0].getsockname()[:2]
            assert host == "127.0.0.1"                 # loopback unless configured otherwise
            base = f"http://127.0.0.1:{port}"
            # the loop stays free to answer while a thread waits for the reply
            status, ctype, body = await asyncio.to_thread(fetch, base + "/metrics")
            assert (status, ctype) == (200, CONTENT_TYPE)
            assert ctype == "text/plain; version=0.0.4; charset=utf-8"
            samples = parse(body)
            assert samples[("shopfleet_slots", (("worker", "w1"),))] == 2
            status, _, _ = await asyncio.to_thread(fetch, base + "/metrics?x=1")
            assert status == 200
            for path in ("/", "/metrics/x", "/favicon.ico"):
                status, _, body = await asyncio.to_thread(fetch, base + path)
                assert status == 404, path
            reply = await asyncio.to_thread(raw, port, b"POST /metrics HTTP/1.1\r\n\r\n")
            assert reply.startswith(b"HTTP/1.1 404 ")
            reply = await asyncio.to_thread(raw, port, b"GET /metrics HTTP/1.0\r\n\r\n")
            assert reply.startswith(b"HTTP/1.1 200 OK\r\n")
            assert reply.endswith(b"\n") and b"\r\n\r\n# HELP shopfleet_" in reply
            assert await asyncio.to_thread(raw, port, b"garbage") == b""   # hung up
            assert scrapes == 3
        finally:
            server.close()
            await server.wait_closed()

    asyncio.run(go())
