"""A real forward proxy on loopback for tests and benchmarks: proxy.py (PyPI ``proxy.py``, a
dev dependency) in a child process, which can be killed and started again on the same port.

The proxy resolves the demo site's host names (``*.shopfleet.test``) to loopback with
:class:`core.testing.proxy_plugin.DemoHostsResolver`, as Chromium does with
``--host-resolver-rules`` (a proxied browser leaves name resolution to its proxy).
proxy.py marks what it forwards with a ``Via`` header.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType

_READY_S = 30.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LoopbackProxy:
    """``proxy.py`` on ``127.0.0.1:port``; ``user``/``password`` turn on basic auth.

    ``start()`` returns once the port accepts connections; ``kill()`` takes it down at once
    (connections refused from then on); ``start()`` again brings it back on the same port.
    """

    def __init__(self, log_dir: Path, *, user: str = "", password: str = "",
                 port: int | None = None) -> None:
        self.port = port or free_port()
        self.user = user
        self.password = password
        self.log_dir = log_dir
        self._proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    @property
    def server(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, *, with_password: bool = True) -> str:
        """The proxy's URL as an operator gives it (``http://user:password@127.0.0.1:port``)."""
        if not self.user:
            return self.server
        from urllib.parse import quote

        cred = quote(self.user, safe="")
        if with_password and self.password:
            cred += ":" + quote(self.password, safe="")
        return f"http://{cred}@127.0.0.1:{self.port}"

    def start(self) -> LoopbackProxy:
        if self._proc is not None and self._proc.poll() is None:
            return self
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.starts += 1
        log = (self.log_dir / f"proxy-{self.port}-{self.starts}.log").open("wb")
        args = [sys.executable, "-m", "proxy", "--hostname", "127.0.0.1",
                "--port", str(self.port), "--num-acceptors", "1", "--num-workers", "2",
                "--plugins", "core.testing.proxy_plugin.DemoHostsResolver",
                "--log-level", "INFO"]
        if self.user:
            args += ["--basic-auth", f"{self.user}:{self.password}"]
        env = dict(os.environ)
        root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        self._proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env,
                                      cwd=str(self.log_dir))
        log.close()
        deadline = time.monotonic() + _READY_S
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"proxy.py exited with {self._proc.returncode}; see "
                                   f"{self.log_dir}")
            with contextlib.suppress(OSError), socket.create_connection(
                    ("127.0.0.1", self.port), timeout=0.5):
                return self
            time.sleep(0.05)
        self.kill()
        raise RuntimeError(f"proxy.py did not listen on {self.port} within {_READY_S:g}s")

    def kill(self) -> None:
        """Kill the proxy (and its workers) now."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        with contextlib.suppress(Exception):
            import psutil

            for child in psutil.Process(proc.pid).children(recursive=True):
                with contextlib.suppress(psutil.Error):
                    child.kill()
        proc.kill()
        proc.wait(timeout=10)
        # Until the port is refused, a task could still reach the old process's socket.
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
            except OSError:
                return
            time.sleep(0.05)

    def log_text(self) -> str:
        return "".join(p.read_text(errors="replace")
                       for p in sorted(self.log_dir.glob(f"proxy-{self.port}-*.log")))

    def __enter__(self) -> LoopbackProxy:
        return self.start()

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.kill()

