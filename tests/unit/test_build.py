"""The composition root chooses an engine's gates and breakers; the engine chooses none."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

from core.build import build_engine, gates_and_breakers
from core.config import Settings
from core.engine import Engine, NoopExecutor
from core.engine.breakers import Breakers
from core.engine.gates import RateGates
from core.engine.redis_breakers import RedisBreakers
from core.engine.redis_gates import RedisRateGates
from core.store.base import Store
from core.testing import FakeClock
from tests.conftest import StoreFactory


def test_an_engine_on_a_file_store_has_this_process_gates_and_breakers(
        make_store: StoreFactory, clock: FakeClock) -> None:
    store = make_store()
    engine = build_engine(store.settings, store, executor="noop", clock=clock)
    assert type(engine.gates) is RateGates and type(engine.breakers) is Breakers


def test_a_shared_store_gets_the_fleets_redis_gates_and_breakers(clock: FakeClock) -> None:
    settings = Settings().with_changes(store={"redis_prefix": "fleet7"})
    shared = cast(Store, SimpleNamespace(shared_url="redis://127.0.0.1:1/0"))
    gates, breakers = gates_and_breakers(settings, shared, clock=clock, owner="w1")
    assert isinstance(gates, RedisRateGates) and isinstance(breakers, RedisBreakers)
    assert breakers.me == "w1"   # probe claims name this worker, as its leases do


def test_the_engine_uses_the_parts_it_is_given(make_store: StoreFactory,
                                               clock: FakeClock) -> None:
    store = make_store()
    gates = RateGates(store.settings.gates, clock=clock)
    breakers = Breakers(store.settings.breakers, clock=clock)
    engine = Engine(store, executor=NoopExecutor(clock=clock), clock=clock, gates=gates,
                    breakers=breakers)
    assert engine.gates is gates and engine.breakers is breakers
    changed: list[Any] = []
    engine.bus.subscribe(changed.append)
    gates.set_rate("shop.example", 2.0, 3.0)   # the engine listens: the change is an event
    assert any(type(e).__name__ == "GateChanged" for e in changed)
