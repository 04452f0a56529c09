"""Finished attempts of the last hour, per second: the engine's done/failed counts (#20)."""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass, field


@dataclass
class _Second:
    """Finished attempts in one second of the clock."""

    at: int
    done: int = 0
    failed: int = 0
    by_class: Counter[str] = field(default_factory=Counter)
    by_platform: Counter[str] = field(default_factory=Counter)


class FinishedWindow:
    """Finished attempts of the last hour, counted per second of the clock (#20).

    Adding one is O(1) and the hour's totals are kept as they change, so a snapshot costs
    the last minute's 60 seconds at most, never one entry per task: at thousands of tasks a
    second a list of every attempt of the hour grew to millions of entries and each snapshot
    walked them all on the engine's loop. A second counts in a window when it began inside
    it (times within the same second are one entry).
    """

    HOUR_S = 3600
    MINUTE_S = 60

    def __init__(self) -> None:
        self._seconds: deque[_Second] = deque()
        self.done = 0
        self.failed = 0
        self.by_class: Counter[str] = Counter()
        self.by_platform: Counter[str] = Counter()

    def __len__(self) -> int:
        return self.done + self.failed

    def add(self, at: float, ok: bool, error_class: str, platform: str) -> None:
        """One finished attempt at clock time ``at`` (a failure has an error class)."""
        sec = int(at // 1)
        last = self._seconds[-1] if self._seconds else None
        if last is None or sec > last.at:
            last = _Second(sec)
            self._seconds.append(last)
        # A time before the newest second (a clock that stepped back) counts in the newest.
        if ok:
            last.done += 1
            self.done += 1
        else:
            last.failed += 1
            self.failed += 1
            last.by_class[error_class] += 1
            last.by_platform[platform] += 1
            self.by_class[error_class] += 1
            self.by_platform[platform] += 1

    def expire(self, now: float) -> None:
        """Forget the seconds that began more than an hour before ``now``."""
        while self._seconds and self._seconds[0].at < now - self.HOUR_S:
            s = self._seconds.popleft()
            self.done -= s.done
            self.failed -= s.failed
            if s.failed:
                self.by_class.subtract(s.by_class)
                self.by_platform.subtract(s.by_platform)
                self.by_class = +self.by_class  # drop the zeros
                self.by_platform = +self.by_platform

    def last_minute(self, now: float) -> tuple[int, int, Counter[str], Counter[str]]:
        """(done, failed, failures by class, by platform) in the seconds that began in the
        minute before ``now``."""
        done = failed = 0
        by_class: Counter[str] = Counter()
        by_platform: Counter[str] = Counter()
        for s in reversed(self._seconds):
            if s.at < now - self.MINUTE_S:
                break
            done += s.done
            failed += s.failed
            if s.failed:
                by_class.update(s.by_class)
                by_platform.update(s.by_platform)
        return done, failed, by_class, by_platform
