"""Lease owner ids: recovery tells a dead worker process of this host from a live one."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

from core.store import new_owner_id
from core.store.owners import owner_is_dead_local


def test_an_owner_id_names_this_host_and_process() -> None:
    host, pid, nonce = new_owner_id().split("/")
    assert (host, int(pid)) == (socket.gethostname(), os.getpid()) and nonce
    assert new_owner_id() != new_owner_id()


def test_a_process_of_this_host_that_exited_is_dead_and_a_running_one_is_not() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                             stdin=subprocess.PIPE)
    owner = f"{socket.gethostname()}/{child.pid}/abcd1234"
    try:
        assert not owner_is_dead_local(owner)          # alive: its lease must not be taken
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait()
    assert owner_is_dead_local(owner)                  # exited (and reaped): recover now


def test_other_hosts_this_process_and_odd_ids_are_never_called_dead() -> None:
    assert not owner_is_dead_local(f"{socket.gethostname()}/{os.getpid()}/x")
    assert not owner_is_dead_local("another-host.example/1/x")
    assert not owner_is_dead_local("not an owner id")
    assert not owner_is_dead_local(f"{socket.gethostname()}/notapid/x")
