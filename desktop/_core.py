"""The console's page queries and the vault, from the core facade (kept as one module so
the desktop's many table modules import them from one place)."""

from __future__ import annotations

from core import (
    SORTS,
    VIEWS,
    FilterChoices,
    ShopRow,
    StepRow,
    TaskDetail,
    TaskFilter,
    TaskPage,
    TaskRow,
    Vault,
    count_tasks,
    filter_choices,
    flow_names,
    metrics_series,
    read_json_file,
    read_text_file,
    shop_rows,
    task_detail,
    task_page,
    task_rows,
)

__all__ = [
    "SORTS",
    "VIEWS",
    "FilterChoices",
    "ShopRow",
    "StepRow",
    "TaskDetail",
    "TaskFilter",
    "TaskPage",
    "TaskRow",
    "Vault",
    "count_tasks",
    "filter_choices",
    "flow_names",
    "metrics_series",
    "read_json_file",
    "read_text_file",
    "shop_rows",
    "task_detail",
    "task_page",
    "task_rows",
]
