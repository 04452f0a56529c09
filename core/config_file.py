"""Writing the settings back to a TOML file that :func:`core.load_settings` reads the same.

The console's settings dialog and its first-run wizard only collect values; writing the file is
this module's job (one format, one atomic write).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .config import Settings


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    raise TypeError(type(v))


def gates_toml(g: dict[str, Any]) -> str:
    """The ``[gates]`` tables of a settings dump (``Settings.model_dump(by_alias=True)``)."""
    lines = ["[gates.global]", f"rate_per_s = {g['global']['rate_per_s']!r}",
             f"burst = {g['global']['burst']!r}", "", "[gates.default_domain]",
             f"rate_per_s = {g['default_domain']['rate_per_s']!r}",
             f"burst = {g['default_domain']['burst']!r}"]
    for name, spec in g.get("domains", {}).items():
        lines += ["", f'[gates.domains."{name}"]', f"rate_per_s = {spec['rate_per_s']!r}",
                  f"burst = {spec['burst']!r}"]
    return "\n".join(lines) + "\n"


def settings_toml(settings: Settings) -> str:
    """The settings as a TOML file that :func:`core.load_settings` reads back the same."""
    data = settings.model_dump(by_alias=True)
    out: list[str] = ["# ShopFleet configuration (written by ShopFleet: the console's settings "
                      "or its first-run wizard)"]
    for section, values in data.items():
        if section == "gates":
            out += ["", gates_toml(values).rstrip()]
            continue
        if section == "notify":  # #19: an array of tables, one [[notify]] per target
            for entry in values:
                out += ["", "[[notify]]"] + [f'"{k}" = {_toml_value(v)}'
                                             for k, v in entry.items()]
            continue
        simple = {k: v for k, v in values.items() if not isinstance(v, dict)}
        tables = {k: v for k, v in values.items() if isinstance(v, dict)}
        out += ["", f"[{section}]"] + [f"{k} = {_toml_value(v)}" for k, v in simple.items()]
        for k, table in tables.items():
            out += ["", f"[{section}.{k}]"] + [f'"{kk}" = {_toml_value(vv)}'
                                                for kk, vv in table.items()]
    return "\n".join(out) + "\n"


def save_settings(settings: Settings, path: str | Path) -> Path:
    """Write ``settings`` to ``path`` atomically (a temporary file, then a rename), making its
    folder when needed. Blocking: call it off any event loop. Returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(settings_toml(settings), encoding="utf-8")
    tmp.replace(path)
    return path
