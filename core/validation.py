"""Checks a task must pass at submission, beyond its own fields: its flow exists, every
placeholder it uses is given, every URL it loads is a page of the shop's allowed origins,
inline steps use no shop credentials (unless ``[security] inline_credentials``), and files
it uploads are inside the asset folders."""

from __future__ import annotations

from pathlib import Path

from .config import Settings
from .flows import FlowRegistry, ShopInfo, check_flow, default_asset_dirs
from .origins import OriginPolicy
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
        self.settings = settings

    def __call__(self, spec: TaskSpec, shop: ShopRecord) -> None:
        flow = self.registry.flow_for(spec.flow, spec.steps)
        fields = {"name", "platform", "base_url"}
        if shop.username:
            fields.add("username")
        if shop.has_password:
            fields.add("password")
        check_flow(flow, params=spec.params, shop_fields=fields, asset_dirs=self.asset_dirs,
                   shop={"name": shop.name, "platform": shop.platform,
                         "base_url": shop.base_url, "username": shop.username},
                   origins=shop_policy(self.settings, shop.platform, shop.base_url,
                                       shop.allowed_origins),
                   allow_credentials=spec.steps is None
                   or self.settings.security.inline_credentials)


def shop_policy(settings: Settings, platform: str, base_url: str,
                allowed_origins: tuple[str, ...] | list[str]) -> OriginPolicy:
    """The origins a shop's tasks may load: its own, its own list, its platform's list."""
    plat = settings.platforms.get(platform)
    extra = [*allowed_origins, *(plat.allowed_origins if plat else [])]
    return OriginPolicy.for_shop(base_url, extra, (plat.login_url or None) if plat else None)


def submission_validator(settings: Settings) -> FlowChecker:
    """The validator the CLI and the engine give the store."""
    return FlowChecker(settings)


def shop_info(settings: Settings, shop: ShopRecord, password: str) -> ShopInfo:
    """What a flow run knows of a shop: its fields, its password, and the origins it may load
    (its own list plus its platform's, and the platform's login URL)."""
    plat = settings.platforms.get(shop.platform)
    return ShopInfo(name=shop.name, platform=shop.platform, base_url=shop.base_url,
                    username=shop.username, password=password,
                    allowed_origins=(*shop.allowed_origins,
                                     *(plat.allowed_origins if plat else ())),
                    login_url=plat.login_url if plat else "")
