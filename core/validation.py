"""Checks a task must pass at submission, beyond its own fields: its flow exists, every
placeholder it uses is given, and files it uploads are inside the asset folders."""

from __future__ import annotations

from pathlib import Path

from .config import Settings
from .flows import FlowRegistry, check_flow, default_asset_dirs
from .specs import TaskSpec
from .store.records import ShopRecord


class FlowChecker:
    """Validator for :class:`core.store.SqliteStore`: raises :class:`SpecError` naming the
    step and placeholder (``steps[1] (type_text).text: placeholder {params.reply} …``).

    Reads the flow folders once, when constructed (not on an event loop).
    """

    def __init__(self, settings: Settings, *, registry: FlowRegistry | None = None) -> None:
        self.registry = registry or FlowRegistry.load([Path(d) for d in settings.flows.dirs])
        self.asset_dirs = default_asset_dirs(settings.assets.dirs)

    def __call__(self, spec: TaskSpec, shop: ShopRecord) -> None:
        flow = self.registry.flow_for(spec.flow, spec.steps)
        fields = {"name", "platform", "base_url"}
        if shop.username:
            fields.add("username")
        if shop.has_password:
            fields.add("password")
        check_flow(flow, params=spec.params, shop_fields=fields, asset_dirs=self.asset_dirs,
                   shop={"name": shop.name, "platform": shop.platform,
                         "base_url": shop.base_url, "username": shop.username})


def submission_validator(settings: Settings) -> FlowChecker:
    """The validator the CLI and the engine give the store."""
    return FlowChecker(settings)
