"""The Redis store: one queue, ticket inbox and event log shared by a fleet of workers.

Nothing is imported here, so ``core.store`` works without the ``redis`` package; open the
store with :func:`core.open_store` (or import :class:`core.store.redis.store.RedisStore`).
Modules: ``store``, ``keys`` (the key layout, a stable interface), ``lua`` (one script per
state change), ``tickets``, ``pages`` (the console's reads) and ``from_sqlite`` (copying a
desktop's SQLite store into Redis: ``shopfleet migrate``).
"""
