"""What AlterConfigs and IncrementalAlterConfigs share: checking a resource and applying the
new topic overrides, dynamic broker configs or group configs, with the errors Kafka's
ConfigAdminManager and controller answer."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable

from broker.config import broker_configs, group_configs, topic_configs
from broker.config.topic_configs import InvalidConfigError
from broker.core.request_context import RequestContext
from broker.handlers._admin import (
    RESOURCE_BROKER,
    RESOURCE_GROUP,
    RESOURCE_TOPIC,
    topic_name_error,
)
from broker.handlers._leadership import request_node
from protocol.errors import ErrorCode
from protocol.schema import Message

log = logging.getLogger(__name__)

# New overrides from the current ones; raises InvalidConfigError.
Change = Callable[[dict[str, str]], dict[str, str | None]]
# New dynamic configs of a BROKER resource, or new overrides of a GROUP resource, from the
# stored ones; raises InvalidConfigError.
BrokerChange = Callable[[dict[str, str]], dict[str, str]]


def result(resource: Message, code: ErrorCode, message: str | None) -> Message:
    return Message(
        error_code=code,
        error_message=message,
        resource_type=resource.resource_type,
        resource_name=resource.resource_name,
    )


def duplicate_resources(resources: list[Message]) -> set[tuple[int, str]]:
    counts = Counter((r.resource_type, r.resource_name) for r in resources)
    return {key for key, n in counts.items() if n > 1}


def node_id_error(name: str, node_id: int) -> str | None:
    """Kafka's validateResourceNameIsCurrentNodeId (an empty name means cluster-wide)."""
    if name == "":
        return None
    try:
        broker = int(name)
    except ValueError:
        return f"Node id must be an integer, but it is: {name}"
    if broker != node_id:
        return f"Unexpected broker id, expected {node_id}, but received {name}"
    return None


def alter(
    ctx: RequestContext,
    resource: Message,
    names: list[str],
    change: Change,
    validate_only: bool,
    broker_change: BrokerChange,
    group_change: BrokerChange,
) -> Message:
    """Check and apply one resource's change; returns its result entry."""
    state = ctx.state
    if len(set(names)) != len(names):
        return result(resource, ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
    kind, name = resource.resource_type, resource.resource_name
    if kind == RESOURCE_BROKER:
        reason = node_id_error(name, request_node(ctx))
        if reason is not None:
            return result(resource, ErrorCode.INVALID_REQUEST, reason)
        return _alter_broker(ctx, resource, broker_change, validate_only)
    if kind == RESOURCE_GROUP:
        return _alter_group(ctx, resource, group_change, validate_only)
    if kind != RESOURCE_TOPIC:
        return result(resource, ErrorCode.INVALID_REQUEST, f"Unknown resource type {kind}")
    if name == "":
        return result(
            resource, ErrorCode.INVALID_REQUEST, "Default topic resources are not allowed."
        )
    reason = topic_name_error(name)
    if reason is not None:
        return result(resource, ErrorCode.INVALID_TOPIC_EXCEPTION, reason)
    info = state.store.topic(name)
    if info is None:
        return result(
            resource, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {name} does not exist."
        )
    try:
        new = change(state.topic_overrides(info))
        topic_configs.validate(new)
    except InvalidConfigError as exc:
        log.info("AlterConfigs on topic %s refused: %s (%s)", name, exc.message, ctx.describe())
        return result(resource, exc.code, exc.message)
    if not validate_only:
        overrides = {k: v for k, v in new.items() if v is not None}
        state.set_topic_configs(info, overrides)
        log.info("topic %s configs now %s (%s)", name, overrides, ctx.describe())
    return result(resource, ErrorCode.NONE, None)


def _alter_broker(
    ctx: RequestContext, resource: Message, change: BrokerChange, validate_only: bool
) -> Message:
    """Kafka's ConfigAdminManager.validateBrokerConfigChange, then the controller stores
    the resource's new set (a ConfigRecord per change): "" is the cluster-wide default."""
    state = ctx.state
    name = resource.resource_name
    try:
        new = change(state.dynamic_broker_configs(name))
        broker_configs.check_dynamic(new, per_broker=name != "")
    except InvalidConfigError as exc:
        log.info("broker configs of %r refused: %s (%s)", name, exc.message, ctx.describe())
        return result(resource, exc.code, exc.message)
    if not validate_only:
        state.set_dynamic_broker_configs(name, new)
        log.info(
            "dynamic broker configs of %s now %s (%s)",
            f"broker {name}" if name else "the cluster default",
            new,
            ctx.describe(),
        )
    return result(resource, ErrorCode.NONE, None)


def _alter_group(
    ctx: RequestContext, resource: Message, change: BrokerChange, validate_only: bool
) -> Message:
    """Kafka 4.0's controller on a GROUP resource: the group's whole new set is checked
    (broker.config.group_configs.check) and stored; the group needs not exist."""
    state = ctx.state
    name = resource.resource_name
    try:
        if name == "":
            group_configs.check(state.config, name, {})
        new = change(state.group_config_overrides(name))
        group_configs.check(state.config, name, new)
    except InvalidConfigError as exc:
        log.info("configs of group %r refused: %s (%s)", name, exc.message, ctx.describe())
        return result(resource, exc.code, exc.message)
    if not validate_only:
        state.set_group_configs(name, new)
        log.info("group %s configs now %s (%s)", name, new, ctx.describe())
    return result(resource, ErrorCode.NONE, None)
