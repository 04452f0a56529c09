"""Lease owners: the id a worker claims tasks under, and telling a dead one on this host.

Both stores use these (a lease names its owner the same way in SQLite and in Redis), so they
live here rather than in either store.
"""

from __future__ import annotations

import os
import socket
import uuid


def new_owner_id() -> str:
    """A lease owner id: host, process id and a nonce, so recovery can tell dead owners."""
    return f"{socket.gethostname()}/{os.getpid()}/{uuid.uuid4().hex[:8]}"


def owner_is_dead_local(owner: str) -> bool:
    """Whether ``owner`` (a :func:`new_owner_id`) names a process of this host that has died.

    False for another host's owner, for this very process, for an id of another shape, and
    when the process exists but belongs to someone else (we cannot signal it: alive).
    """
    try:
        host, pid_s, _ = owner.split("/", 2)
        pid = int(pid_s)
    except ValueError:
        return False
    if host != socket.gethostname() or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False
