"""DescribeConfigs, versions 1-4.

Behaviour (Kafka's ConfigHelper.describeConfigs): a topic resource lists every topic config
(broker.config.topic_configs) with its effective value and source: DYNAMIC_TOPIC_CONFIG for an
override, else as the broker config behind it (STATIC_BROKER_CONFIG or DEFAULT_CONFIG);
synonyms (include_synonyms) follow Kafka's chain (broker.config.synonyms); documentation is
filled in v3+ when asked for. configuration_keys null or empty means all. An illegal topic
name gets INVALID_TOPIC_EXCEPTION with Topic.validate's text; a missing topic
UNKNOWN_TOPIC_OR_PARTITION with no text. Kafka sets no message on those results, so the
field keeps its default: "" (not null), as on every successful result.

A broker resource named by this broker's id (a simulated cluster's node: the id of the node
the request reached, with its own node.id and broker.rack as static configs) lists every
Kafka 4.0 broker config as Kafka does (broker.config.broker_configs: value, source,
synonyms, read_only unless dynamic, config type, PASSWORD values hidden); the empty name
lists the cluster-wide dynamic configs; another id gets INVALID_REQUEST. BROKER_LOGGER
lists the root logger's level. A GROUP resource lists Kafka 4.0's group configs
(broker.config.group_configs: GROUP_CONFIG for the group's stored overrides, else the
broker's defaults; an empty name: INVALID_REQUEST). Other resource types get
INVALID_REQUEST.

Deviations: see broker.config.broker_configs (dynamic broker configs are described, not acted on;
documentation texts are minikafka's).
Authorization (with an authorizer): DESCRIBE_CONFIGS on the topic, group or cluster (broker
resources), else TOPIC_/GROUP_/CLUSTER_AUTHORIZATION_FAILED with Errors.message().
"""

from __future__ import annotations

import logging

from broker.config import broker_configs, group_configs, topic_configs
from broker.config.broker_config_table import ConfigSource, ConfigType
from broker.config.topic_configs import ConfigEntry
from broker.core.request_context import RequestContext
from broker.handlers._admin import (
    RESOURCE_BROKER,
    RESOURCE_BROKER_LOGGER,
    RESOURCE_GROUP,
    RESOURCE_TOPIC,
    config_entries,
    describe_entry,
    topic_name_error,
)
from broker.handlers._config_access import MESSAGES, denied
from broker.handlers._leadership import node_static_configs, request_node
from broker.security import acl
from protocol.errors import ErrorCode
from protocol.messages.describe_configs import DESCRIBE_CONFIGS
from protocol.schema import Message

API = DESCRIBE_CONFIGS
MIN_VERSION = 1
MAX_VERSION = 4


def broker_id_error(name: str, node_id: int) -> str | None:
    """Kafka's check of a BROKER resource name: empty, or this broker's id."""
    if name == "":
        return None
    try:
        broker = int(name)
    except ValueError:
        return f"Broker id must be an integer, but it is: {name}"
    if broker != node_id:
        return f"Unexpected broker id, expected {node_id} or empty string, but received {name}"
    return None


def _entries(ctx: RequestContext, resource: Message) -> list[ConfigEntry]:
    """The resource's configs; raises _Failed with Kafka's error."""
    state = ctx.state
    kind, name = resource.resource_type, resource.resource_name
    if kind == RESOURCE_TOPIC:
        reason = topic_name_error(name)
        if reason is not None:
            raise _Failed(ErrorCode.INVALID_TOPIC_EXCEPTION, reason)
        info = state.store.topic(name)
        if info is None:
            raise _Failed(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "")
        return topic_configs.describe_topic(state.config, state.topic_overrides(info))
    if kind == RESOURCE_BROKER:
        # Each node answers for itself (a simulated cluster's node by its own id and rack).
        node = request_node(ctx)
        reason = broker_id_error(name, node)
        if reason is not None:
            raise _Failed(ErrorCode.INVALID_REQUEST, reason)
        cluster_default = state.dynamic_broker_configs("")
        if name == "":
            return broker_configs.describe_cluster_defaults(state.config, cluster_default)
        return broker_configs.describe_broker(
            state.config,
            cluster_default,
            state.dynamic_broker_configs(name),
            node_static_configs(ctx, node),
        )
    if kind == RESOURCE_GROUP:
        if not name:
            raise _Failed(ErrorCode.INVALID_REQUEST, "Group name must not be empty")
        return group_configs.describe(state.config, state.group_config_overrides(name))
    if kind == RESOURCE_BROKER_LOGGER:
        reason = broker_id_error(name, request_node(ctx))
        if reason is not None or name == "":
            raise _Failed(ErrorCode.INVALID_REQUEST, reason or "A broker id is required")
        level = logging.getLevelName(logging.getLogger().getEffectiveLevel())
        return [
            ConfigEntry(
                "root",
                "WARN" if level == "WARNING" else level,
                ConfigSource.DYNAMIC_BROKER_LOGGER_CONFIG,
                True,
                ConfigType.STRING,
                "Level of the root logger.",
                (),
            )
        ]
    raise _Failed(ErrorCode.INVALID_REQUEST, f"Unsupported resource type: {kind}")


class _Failed(Exception):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def handle(ctx: RequestContext, request: Message) -> Message:
    synonyms = bool(request.include_synonyms)
    documentation = bool(request.include_documentation)
    results: list[Message] = []
    for resource in request.resources:
        error = denied(ctx, acl.DESCRIBE_CONFIGS, resource.resource_type, resource.resource_name)
        if error is not None:
            results.append(
                Message(
                    error_code=error,
                    error_message=MESSAGES[error],
                    resource_type=resource.resource_type,
                    resource_name=resource.resource_name,
                    configs=[],
                )
            )
            continue
        try:
            entries = config_entries(_entries(ctx, resource), resource.configuration_keys)
        except _Failed as exc:
            results.append(
                Message(
                    error_code=exc.code,
                    error_message=exc.message,
                    resource_type=resource.resource_type,
                    resource_name=resource.resource_name,
                    configs=[],
                )
            )
            continue
        results.append(
            Message(
                error_code=ErrorCode.NONE,
                error_message="",
                resource_type=resource.resource_type,
                resource_name=resource.resource_name,
                configs=[describe_entry(e, synonyms, documentation) for e in entries],
            )
        )
    return Message(throttle_time_ms=0, results=results)
