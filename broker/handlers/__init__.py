"""One module per API. Each declares API, MIN_VERSION, MAX_VERSION and handle(ctx, request)."""

from __future__ import annotations

from types import ModuleType

from broker.dispatch import Dispatcher
from broker.handlers import api_versions, fetch, init_producer_id, metadata, produce

MODULES: tuple[ModuleType, ...] = (produce, fetch, metadata, api_versions, init_producer_id)


def build_dispatcher() -> Dispatcher:
    dispatcher = Dispatcher()
    for module in MODULES:
        dispatcher.register(
            module.API,
            module.handle,
            module.MIN_VERSION,
            module.MAX_VERSION,
            getattr(module, "ADVERTISED_MIN_VERSION", None),
        )
    return dispatcher
