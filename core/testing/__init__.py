"""What tests, benchmarks and demos share, shipped with core so desktop tests use the same ones.

* :mod:`.fakes` — :class:`FakeClock`, :func:`drive`, :class:`FakeExecutor` (importable from here);
* :mod:`.redis_server` — a throwaway ``redis-server`` for fleet tests and benchmarks;
* :mod:`.fleet_client` — a submitting client, ``python -m core.testing.fleet_client``.

The two last ones are imported by their module path only, so ``from core.testing import
FakeClock`` stays as light as it was. The packaged app leaves this whole package out.
"""

from .fakes import FakeClock, FakeExecutor, drive

__all__ = ["FakeClock", "FakeExecutor", "drive"]
