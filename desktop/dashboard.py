"""The dashboard: charts over the per-minute history plus live points, gate levels, breakers.

Charts use pyqtgraph rather than QtCharts: QtCharts ships only in PySide6-Addons (a download
several times the size of Essentials, and more to bundle in the installer), while pyqtgraph is
a small pure-Python package on numpy, draws thousands of points per second without stalling
the GUI thread, and has a time axis built in. Without pyqtgraph installed the dashboard says so
instead of failing.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any

from PySide6.QtWidgets import QGridLayout, QLabel, QVBoxLayout, QWidget

from core import BreakerState, EngineStatistics

from . import names, palette
from .i18n import QT_TR_NOOP, tr

try:  # pyqtgraph is the desktop extra's chart library
    import pyqtgraph as pg
except ImportError:  # pragma: no cover - shown in the window instead
    pg = None

LIVE_POINTS = 900
"""Seconds of live points kept (15 minutes) on top of the per-minute history."""

CHARTS: list[tuple[str, str, list[tuple[str, str]]]] = [
    # (key, title, [(series key in the minute row / stats, label)]); colours: palette.series
    ("depth", QT_TR_NOOP("Queue depth"), [("queued", QT_TR_NOOP("queued")),
                                          ("running", QT_TR_NOOP("running"))]),
    ("throughput", QT_TR_NOOP("Throughput per minute"),
     [("done", QT_TR_NOOP("done")), ("failed", QT_TR_NOOP("failed"))]),
    ("success", QT_TR_NOOP("Success rate %"),
     [("success_rate", QT_TR_NOOP("success")),
      ("resume_success_rate", QT_TR_NOOP("resume success"))]),
    ("wait", QT_TR_NOOP("Oldest wait (s)"), [("oldest_wait_s", QT_TR_NOOP("oldest wait"))]),
    ("preempt", QT_TR_NOOP("Preemptions per hour"),
     [("preemptions_per_hour", QT_TR_NOOP("preemptions"))]),
    ("tickets", QT_TR_NOOP("Open tickets"), [("open_tickets", QT_TR_NOOP("open tickets"))]),
]


def _value(row: dict[str, Any], key: str) -> float | None:
    v = row.get(key)
    if v is None:
        return None
    if key in ("success_rate", "resume_success_rate"):
        return float(v) * 100.0
    return float(v)


def stats_row(s: EngineStatistics) -> dict[str, Any]:
    """A live statistics snapshot in the shape of a per-minute history row."""
    return {"queued": s.queued, "running": s.running, "done": s.done_per_min,
            "failed": s.failed_per_min, "success_rate": s.success_rate,
            "oldest_wait_s": s.oldest_wait_s, "preemptions_per_hour": s.preemptions_per_hour,
            "resume_success_rate": s.resume_success_rate, "open_tickets": s.open_tickets}


class Dashboard(QWidget):
    """Charts and live gauges. Feed it with :meth:`set_history` and :meth:`add_live`."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("dashboard")
        self.history: list[tuple[float, dict[str, Any]]] = []
        self.live: deque[tuple[float, dict[str, Any]]] = deque(maxlen=LIVE_POINTS)
        self.curves: dict[str, Any] = {}
        self.plots: dict[str, Any] = {}
        lay = QVBoxLayout(self)
        self.breakers = QLabel(self)
        self.breakers.setObjectName("dashboard-breakers")
        self.breakers.setWordWrap(True)
        if pg is None:
            lay.addWidget(QLabel(tr("Charts need pyqtgraph (pip install pyqtgraph)."), self))
            lay.addWidget(self.breakers)
            self.gates_plot = None
            return
        pg.setConfigOptions(antialias=True, background=palette.chart_background(),
                            foreground=palette.chart_foreground())
        grid = QGridLayout()
        self.legends: dict[str, Any] = {}
        for i, (key, _title, series) in enumerate(CHARTS):
            w = pg.PlotWidget(axisItems={"bottom": pg.DateAxisItem()})
            w.setObjectName(f"chart-{key}")
            w.showGrid(x=True, y=True, alpha=0.2)
            w.setMouseEnabled(x=True, y=False)
            if len(series) > 1:
                self.legends[key] = w.addLegend(offset=(5, 5))
            for skey, label in series:
                self.curves[f"{key}:{skey}"] = w.plot(
                    [], [], pen=pg.mkPen(palette.series(skey), width=2), name=tr(label))
            self.plots[key] = w
            grid.addWidget(w, i // 3, i % 3)
        lay.addLayout(grid, 3)
        self.gates_plot = pg.PlotWidget()
        self.gates_plot.setObjectName("chart-gates")
        self.gates_plot.setYRange(0, 1)
        self.gates_plot.setMouseEnabled(x=False, y=False)
        self.gates_plot.setMaximumHeight(240)
        self.gate_bars = pg.BarGraphItem(x=[], height=[], width=0.6,
                                         brush=palette.series("gates"))
        self.gates_plot.addItem(self.gate_bars)
        bottom = QGridLayout()
        bottom.addWidget(self.gates_plot, 0, 0)
        bottom.addWidget(self.breakers, 0, 1)
        bottom.setColumnStretch(0, 2)
        bottom.setColumnStretch(1, 1)
        lay.addLayout(bottom, 1)
        self.retranslate()

    def retranslate(self) -> None:
        if pg is None:
            return
        color = palette.chart_foreground()
        for key, title, series in CHARTS:
            self.plots[key].setTitle(tr(title), color=color)
            legend = self.legends.get(key)
            if legend is not None:
                for (_skey, label), (_, text) in zip(series, legend.items, strict=False):
                    text.setText(tr(label))
        if self.gates_plot is not None:
            self.gates_plot.setTitle(tr("Rate limit levels (tokens / burst)"), color=color)

    def apply_palette(self) -> None:
        """Follow the light or dark scheme: backgrounds, axes, series colours."""
        if pg is None:
            return
        bg, fg = palette.chart_background(), palette.chart_foreground()
        pg.setConfigOptions(background=bg, foreground=fg)
        plots = [*self.plots.values()] + ([self.gates_plot] if self.gates_plot else [])
        for w in plots:
            w.setBackground(bg)
            for side in ("left", "bottom"):
                ax = w.getAxis(side)
                ax.setPen(fg)
                ax.setTextPen(fg)
        for key, _, series in CHARTS:
            for skey, _ in series:
                self.curves[f"{key}:{skey}"].setPen(pg.mkPen(palette.series(skey), width=2))
            legend = self.legends.get(key)
            if legend is not None:
                legend.setLabelTextColor(fg)
        if self.gates_plot is not None:
            self.gate_bars.setOpts(brush=palette.series("gates"))
        self.retranslate()

    def set_history(self, rows: list[tuple[int, dict[str, Any]]]) -> None:
        self.history = [(m * 60.0, d) for m, d in rows]
        self.redraw()

    def add_live(self, s: EngineStatistics) -> None:
        self.live.append((s.at, stats_row(s)))
        self.show_gates(s)

    def points(self) -> list[tuple[float, dict[str, Any]]]:
        """History, then live points after the last history minute."""
        last = self.history[-1][0] + 60 if self.history else 0.0
        return self.history + [(t, d) for t, d in self.live if t >= last]

    def redraw(self) -> None:
        if pg is None or not self.isVisible():
            return
        pts = self.points()
        for key, _, series in CHARTS:
            for skey, _ in series:
                xs, ys = [], []
                for t, d in pts:
                    v = _value(d, skey)
                    if v is not None:
                        xs.append(t)
                        ys.append(v)
                self.curves[f"{key}:{skey}"].setData(xs, ys)

    def show_gates(self, s: EngineStatistics) -> None:
        parts = []
        for b in s.breakers:
            color = palette.breaker_color(b.state.value).name()
            name = names.breaker(b.name)
            extra = ""
            if b.state is not BreakerState.CLOSED and b.next_probe_at:
                extra = " · " + tr("probe in %1", names.duration(
                    max(0, b.next_probe_at - time.time())))
            parts.append(f"<span style='color:{color}'>●</span> {name}: "
                         f"<b>{names.breaker_state(b.state.value)}</b> "
                         f"({tr('%1 recent failures', b.recent_failures)}){extra}")
        self.breakers.setText("<b>" + tr("Breakers") + "</b><br>" + (
            "<br>".join(parts) if parts else tr("all normal")))
        if pg is None or self.gates_plot is None or not self.isVisible():
            return
        gates = s.gates
        xs = list(range(len(gates)))
        hs = [min(1.0, g.tokens / g.burst) if g.burst else 0.0 for g in gates]
        self.gate_bars.setOpts(x=xs, height=hs, width=0.6)
        ax = self.gates_plot.getAxis("bottom")
        ax.setTicks([[(i, names.gate(g.name))
                      for i, g in enumerate(gates)]])
