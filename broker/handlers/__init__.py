"""One module per API. Each declares API, MIN_VERSION, MAX_VERSION and handle(ctx, request)."""

from __future__ import annotations

from types import ModuleType

from broker.dispatch import Dispatcher
from broker.handlers import (
    api_versions,
    delete_groups,
    describe_groups,
    fetch,
    find_coordinator,
    heartbeat,
    init_producer_id,
    join_group,
    leave_group,
    list_groups,
    list_offsets,
    metadata,
    offset_commit,
    offset_delete,
    offset_fetch,
    offset_for_leader_epoch,
    produce,
    sync_group,
)

MODULES: tuple[ModuleType, ...] = (
    produce,
    fetch,
    metadata,
    api_versions,
    init_producer_id,
    # Consumer groups (broker.groups).
    offset_commit,
    offset_fetch,
    find_coordinator,
    join_group,
    heartbeat,
    leave_group,
    sync_group,
    describe_groups,
    list_groups,
    delete_groups,
    offset_delete,
    # Consume path: offsets by time, position validation.
    list_offsets,
    offset_for_leader_epoch,
)


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
