"""Finding a browser to drive, and saying plainly what was found or why nothing works.

Candidates are tried in this order, the first that exists wins:

1. ``[browser] executable_path`` from the configuration;
2. a Chromium that Playwright itself downloaded (``playwright install chromium``);
3. an installed Google Chrome or Microsoft Edge, driven through Playwright's ``channel``
   (``[browser] channel`` puts one of them first);
4. a Chromium at the usual places (``/usr/bin/chromium``, ``/snap/bin/chromium``,
   ``/Applications/Chromium.app``, Program Files...).

Nothing here launches a browser: existence is checked on disk and the version is read with
``<exe> --version`` (with a timeout), so :func:`doctor` is quick and safe to run anywhere.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..config import BrowserSettings
from ..errors import EnvironmentProblem

BrowserKind = Literal["configured", "playwright", "channel", "system"]

VERSION_TIMEOUT_S = 10.0
"""How long ``<exe> --version`` may take (a first start of Chrome on Windows can be slow)."""

_BASE_ARGS: tuple[str, ...] = (
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-gpu",
)

# Where Playwright puts the executable inside its chromium-<rev> folder, per platform and per
# Playwright generation (Chrome for Testing builds since 1.49, plain Chromium builds before).
_PLAYWRIGHT_CHROMIUM_RELPATHS: dict[str, tuple[tuple[str, ...], ...]] = {
    "linux": (("chrome-linux64", "chrome"), ("chrome-linux-arm64", "chrome"),
              ("chrome-linux", "chrome")),
    "darwin": (
        ("chrome-mac-arm64", "Google Chrome for Testing.app", "Contents", "MacOS",
         "Google Chrome for Testing"),
        ("chrome-mac-x64", "Google Chrome for Testing.app", "Contents", "MacOS",
         "Google Chrome for Testing"),
        ("chrome-mac", "Chromium.app", "Contents", "MacOS", "Chromium"),
    ),
    "win32": (("chrome-win64", "chrome.exe"), ("chrome-win", "chrome.exe")),
}

# Where Chrome and Edge install themselves; the same table Playwright uses for `channel`.
_CHANNEL_PATHS: dict[str, dict[str, tuple[str, ...]]] = {
    "chrome": {
        "linux": ("/opt/google/chrome/chrome",),
        "darwin": ("/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",),
        "win32": (r"Google\Chrome\Application\chrome.exe",),
    },
    "msedge": {
        "linux": ("/opt/microsoft/msedge/msedge",),
        "darwin": ("/Applications/Microsoft Edge.app/Contents/MacOS/Microsoft Edge",),
        "win32": (r"Microsoft\Edge\Application\msedge.exe",),
    },
}
_CHANNEL_NAMES = {"chrome": "Google Chrome", "msedge": "Microsoft Edge"}

_SYSTEM_CHROMIUMS: dict[str, tuple[str, ...]] = {
    "linux": ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome",
              "/usr/bin/google-chrome-stable", "/snap/bin/chromium"),
    "darwin": ("/Applications/Chromium.app/Contents/MacOS/Chromium",),
    "win32": (r"Chromium\Application\chrome.exe",),
}


@dataclass(frozen=True)
class BrowserChoice:
    """The browser ShopFleet will drive.

    Attributes:
        kind: where it came from: ``configured``, ``playwright``, ``channel`` or ``system``.
        executable_path: the executable to launch (None when Playwright finds it by channel).
        channel: the Playwright channel (``chrome``, ``msedge``) or None.
        version: what ``--version`` printed, or None when it could not be read.
        notes: anything worth telling the operator about this choice.
    """

    kind: BrowserKind
    executable_path: str | None
    channel: str | None
    version: str | None
    notes: str = ""

    def describe(self) -> str:
        """One line for logs and the console, e.g. ``Chromium 126.0 (/usr/bin/chromium)``."""
        where = self.executable_path or f"channel {self.channel}"
        return f"{self.version or 'unknown version'} ({where}, {self.kind})"


@dataclass(frozen=True)
class Finding:
    """What one candidate turned out to be.

    Attributes:
        candidate: what was looked for, in plain words.
        status: ``found``, ``not found`` or ``failed``.
        detail: what was seen: the path, the version, or why it failed.
        fix: what the operator can do about it (empty when found).
    """

    candidate: str
    status: Literal["found", "not found", "failed"]
    detail: str
    fix: str = ""


@dataclass(frozen=True)
class DoctorReport:
    """Every candidate looked at and the browser that will be used (None: none works)."""

    findings: tuple[Finding, ...]
    choice: BrowserChoice | None

    @property
    def ok(self) -> bool:
        return self.choice is not None

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "choice": dataclasses.asdict(self.choice) if self.choice else None,
            "findings": [dataclasses.asdict(f) for f in self.findings],
        }

    def to_text(self) -> str:
        lines = []
        for f in self.findings:
            lines.append(f"[{f.status:>9}] {f.candidate}: {f.detail}")
            if f.fix:
                lines.append(f"            fix: {f.fix}")
        if self.choice is not None:
            lines.append(f"Using {self.choice.describe()}.")
            if self.choice.notes:
                lines.append(f"Note: {self.choice.notes}")
        else:
            lines.append("No usable browser. " + _NOTHING_FIX)
        return "\n".join(lines)


_NOTHING_FIX = (
    "Install Google Chrome or Microsoft Edge, or set [browser] executable_path in the "
    "configuration to a Chromium/Chrome executable."
)


def _platform() -> str:
    if sys.platform.startswith("linux"):
        return "linux"
    if sys.platform == "darwin":
        return "darwin"
    if sys.platform == "win32":
        return "win32"
    return sys.platform


def _windows_roots() -> list[Path]:
    names = ("LOCALAPPDATA", "PROGRAMFILES", "PROGRAMFILES(X86)", "ProgramW6432")
    roots = [os.environ.get(n, "") for n in names]
    return [Path(r) for r in dict.fromkeys(roots) if r]


def _expand(paths: Iterable[str], platform: str) -> list[Path]:
    """Absolute candidates; Windows entries are relative to each Program Files-like root."""
    if platform != "win32":
        return [Path(p) for p in paths]
    return [root / p for p in paths for root in _windows_roots()]


def _is_executable(path: Path) -> bool:
    return path.is_file() and (os.name == "nt" or os.access(path, os.X_OK))


def playwright_cache_dirs() -> list[Path]:
    """Folders where Playwright keeps the browsers it downloaded, most specific first."""
    env = os.environ.get("PLAYWRIGHT_BROWSERS_PATH", "")
    dirs: list[Path] = []
    if env == "0":
        # "0" means: inside the installed playwright package.
        try:
            import playwright

            dirs.append(Path(playwright.__file__).parent / "driver" / "package" / ".local-browsers")
        except ImportError:  # pragma: no cover - playwright is a dependency
            pass
    elif env:
        dirs.append(Path(env))
    platform = _platform()
    home = Path.home()
    if platform == "linux":
        cache = os.environ.get("XDG_CACHE_HOME") or str(home / ".cache")
        dirs.append(Path(cache) / "ms-playwright")
    elif platform == "darwin":
        dirs.append(home / "Library" / "Caches" / "ms-playwright")
    elif platform == "win32":
        local = os.environ.get("LOCALAPPDATA") or str(home / "AppData" / "Local")
        dirs.append(Path(local) / "ms-playwright")
    return dirs


def _expected_playwright_revision() -> str | None:
    """The chromium revision this Playwright version downloads, from its browsers.json."""
    try:
        import playwright

        data = json.loads(
            (Path(playwright.__file__).parent / "driver" / "package" / "browsers.json")
            .read_text(encoding="utf-8"))
        for b in data.get("browsers", []):
            if b.get("name") == "chromium":
                return str(b.get("revision"))
    except (ImportError, OSError, ValueError):
        pass
    return None


def find_playwright_chromium() -> list[Path]:
    """Executables of Chromium builds Playwright downloaded, this Playwright's revision first."""
    want = _expected_playwright_revision()
    rels = _PLAYWRIGHT_CHROMIUM_RELPATHS.get(_platform(), ())
    found: list[tuple[int, int, Path]] = []
    for cache in playwright_cache_dirs():
        try:
            folders = [p for p in cache.iterdir() if p.name.startswith("chromium-")]
        except OSError:
            continue
        for folder in folders:
            rev = folder.name.removeprefix("chromium-")
            # Playwright writes the marker last: a folder without it is a broken download.
            if not (folder / "INSTALLATION_COMPLETE").exists():
                continue
            for rel in rels:
                exe = folder.joinpath(*rel)
                if _is_executable(exe):
                    rank = 0 if rev == want else 1
                    found.append((rank, -int(rev) if rev.isdigit() else 0, exe))
                    break
    return [exe for _, _, exe in sorted(found)]


def read_version(executable: str | Path, *, timeout_s: float = VERSION_TIMEOUT_S) -> str:
    """``<exe> --version`` output, e.g. ``Chromium 126.0.6478.126``.

    Raises:
        EnvironmentProblem: the executable did not run or did not answer in time.
    """
    try:
        proc = subprocess.run(
            [str(executable), "--version"], capture_output=True, text=True,
            timeout=timeout_s, check=False, stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        raise EnvironmentProblem(
            f"{executable} --version did not answer within {timeout_s:g}s") from None
    except OSError as exc:
        raise EnvironmentProblem(f"{executable} cannot be run: {exc.strerror or exc}") from None
    # Some wrappers (Debian's chromium script) print shell noise on stderr: look for a version
    # line on stdout first.
    for line in proc.stdout.splitlines():
        if re.search(r"\d+\.\d+", line):
            return line.strip()
    if proc.returncode != 0:
        err = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise EnvironmentProblem(
            f"{executable} --version failed (exit {proc.returncode}): {err}")
    raise EnvironmentProblem(f"{executable} --version printed no version")


def _channel_order(settings: BrowserSettings) -> list[str]:
    order = ["chrome", "msedge"]
    if settings.channel:
        order = [settings.channel] + [c for c in order if c != settings.channel]
    return order


def _check_exe(path: Path) -> tuple[bool, str | None, str]:
    """(usable, version, detail)."""
    if not path.exists():
        return False, None, f"{path} does not exist"
    if not _is_executable(path):
        return False, None, f"{path} is not an executable file"
    try:
        version = read_version(path)
    except EnvironmentProblem as exc:
        return False, None, str(exc)
    return True, version, f"{version} at {path}"


def doctor(settings: BrowserSettings) -> DoctorReport:
    """Look at every candidate browser, in order, and say what was found.

    The first usable candidate becomes the choice; the later ones are still reported so the
    operator sees every option (and what to fix to use a different one).
    """
    findings: list[Finding] = []
    choice: BrowserChoice | None = None
    platform = _platform()

    def take(c: BrowserChoice) -> None:
        nonlocal choice
        if choice is None:
            choice = c

    # 1. Configured path.
    if settings.executable_path:
        p = Path(settings.executable_path).expanduser()
        ok, version, detail = _check_exe(p)
        if ok:
            findings.append(Finding("configured [browser] executable_path", "found", detail))
            take(BrowserChoice("configured", str(p), None, version))
        else:
            findings.append(Finding(
                "configured [browser] executable_path", "failed", detail,
                "fix [browser] executable_path, or remove it to let ShopFleet find a browser"))
    else:
        findings.append(Finding("configured [browser] executable_path", "not found",
                                "not set (that is fine: ShopFleet looks for one)"))

    # 2. Playwright's own download.
    pw = find_playwright_chromium()
    if not pw:
        dirs = ", ".join(str(d) for d in playwright_cache_dirs())
        findings.append(Finding(
            "Chromium downloaded by Playwright", "not found", f"nothing in {dirs}",
            "run `python -m playwright install chromium` where the internet is reachable"))
    for exe in pw[:1]:
        ok, version, detail = _check_exe(exe)
        if ok:
            findings.append(Finding("Chromium downloaded by Playwright", "found", detail))
            take(BrowserChoice("playwright", str(exe), None, version))
        else:
            findings.append(Finding(
                "Chromium downloaded by Playwright", "failed", detail,
                "run `python -m playwright install chromium` again"))

    # 3. Installed Chrome / Edge through Playwright's channel.
    for channel in _channel_order(settings):
        name = _CHANNEL_NAMES.get(channel, channel)
        paths = _expand(_CHANNEL_PATHS.get(channel, {}).get(platform, ()), platform)
        if channel not in _CHANNEL_PATHS:
            findings.append(Finding(
                f"channel {channel!r}", "failed", "ShopFleet does not know this channel",
                'set [browser] channel to "chrome" or "msedge", or leave it empty'))
            continue
        present = [p for p in paths if p.exists()]
        if not present:
            where = ", ".join(str(p) for p in paths) or "(no known location on this system)"
            findings.append(Finding(
                f"{name} (channel {channel!r})", "not found", f"not installed at {where}",
                f"install {name}, or set [browser] executable_path"))
            continue
        ok, version, detail = _check_exe(present[0])
        if ok:
            findings.append(Finding(f"{name} (channel {channel!r})", "found", detail))
            take(BrowserChoice("channel", None, channel, version,
                               notes=f"{name} found at {present[0]}"))
        else:
            findings.append(Finding(
                f"{name} (channel {channel!r})", "failed", detail,
                f"reinstall {name}, or set [browser] executable_path to another browser"))

    # 4. A Chromium at the usual places.
    system = [p for p in _expand(_SYSTEM_CHROMIUMS.get(platform, ()), platform) if p.exists()]
    if not system:
        findings.append(Finding(
            "Chromium installed on the system", "not found",
            "none at the usual places",
            "install Chromium (e.g. `apt install chromium`), or set [browser] executable_path"))
    for exe in system[:1]:
        ok, version, detail = _check_exe(exe)
        if ok:
            findings.append(Finding("Chromium installed on the system", "found", detail))
            take(BrowserChoice("system", str(exe), None, version))
        else:
            findings.append(Finding(
                "Chromium installed on the system", "failed", detail,
                "reinstall it, or set [browser] executable_path to another browser"))

    return DoctorReport(tuple(findings), choice)


def discover(settings: BrowserSettings) -> BrowserChoice:
    """The browser to drive.

    Raises:
        EnvironmentProblem: no candidate works; the message lists what was tried and the fix.
    """
    report = doctor(settings)
    if report.choice is None:
        tried = "; ".join(f"{f.candidate}: {f.detail}" for f in report.findings)
        raise EnvironmentProblem(f"no usable browser found ({tried}). {_NOTHING_FIX}")
    return report.choice


def running_as_root() -> bool:
    """True for root on POSIX (Chromium refuses to sandbox there)."""
    geteuid = getattr(os, "geteuid", None)
    return bool(geteuid is not None and geteuid() == 0)


def launch_args(settings: BrowserSettings, *, as_root: bool) -> list[str]:
    """Chromium command-line flags for a pool browser.

    ``--no-sandbox`` only for root on Linux (Chromium will not start there otherwise); the rest
    keeps a robot's browser from phoning home, updating itself or spending GPU on nothing.
    """
    args: list[str] = []
    if as_root and _platform() == "linux":
        args.append("--no-sandbox")
    args.extend(_BASE_ARGS)
    if settings.host_resolver_rules:
        args.append(f"--host-resolver-rules={settings.host_resolver_rules}")
    args.extend(settings.extra_args)
    return args


__all__: Sequence[str] = (
    "BrowserChoice", "DoctorReport", "Finding", "discover", "doctor", "launch_args",
    "read_version", "running_as_root",
)
