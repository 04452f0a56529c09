"""Start a private ``redis-server`` on loopback (tests, benchmarks, ``shopfleet demo --redis``).

Not for production: a fleet runs its own Redis. This one keeps no files (no RDB, no AOF) and
listens on 127.0.0.1 only.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from ..errors import EnvironmentProblem


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RedisServer:
    """A throwaway ``redis-server`` process; ``url`` is where it listens."""

    def __init__(self, *, binary: str | None = None, durable: bool = False) -> None:
        exe = binary or shutil.which("redis-server")
        if not exe:
            raise EnvironmentProblem("redis-server is not installed (Debian: apt-get install "
                                     "redis-server; macOS: brew install redis)")
        self.exe = exe
        self.port = 0
        self.dir = Path(tempfile.mkdtemp(prefix="shopfleet-redis-"))
        self.proc: subprocess.Popen[bytes] | None = None
        self.durable = durable
        """Keep an append-only file synced on every write (survives :meth:`restart`)."""

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def restart(self, *, down_s: float = 0.0, timeout_s: float = 10.0) -> None:
        """Stop the server, stay down ``down_s`` seconds, start it on the same port."""
        port = self.port
        self.stop()
        time.sleep(down_s)
        self.start(timeout_s, port=port)

    def start(self, timeout_s: float = 10.0, *, port: int = 0) -> RedisServer:
        aof = ["--appendonly", "yes", "--appendfsync", "always"] if self.durable else [
            "--appendonly", "no"]
        for _ in range(5):
            self.port = port or _free_port()
            self.proc = subprocess.Popen(
                [self.exe, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                 *aof, "--dir", str(self.dir), "--daemonize", "no",
                 "--protected-mode", "yes", "--loglevel", "warning"],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            deadline = time.monotonic() + timeout_s
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    break
                try:
                    with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as s:
                        s.sendall(b"PING\r\n")
                        if s.recv(16).startswith(b"+PONG"):
                            return self
                except OSError:
                    time.sleep(0.05)
            self.stop()
        raise EnvironmentProblem("redis-server did not start on loopback")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        if self.proc is not None and self.proc.stderr is not None:
            self.proc.stderr.close()  # else a ResourceWarning fails the session's last test
        self.proc = None

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
