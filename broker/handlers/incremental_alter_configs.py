"""IncrementalAlterConfigs, versions 0-1 (KIP-339).

Behaviour: each operation changes one topic override: SET (0), DELETE (1, back to the
default), APPEND (2) and SUBTRACT (3) on list configs (cleanup.policy, throttled replicas);
APPEND/SUBTRACT on another type -> INVALID_REQUEST, an unknown operation -> INVALID_REQUEST.
The resulting overrides are validated as a whole (unknown name, invalid value ->
INVALID_CONFIG), applied at once and persisted; validate_only checks only. Repeated
resources or keys -> INVALID_REQUEST; a missing topic -> UNKNOWN_TOPIC_OR_PARTITION.

A non-DELETE operation with a null value -> INVALID_REQUEST "Null value not supported for :
<names>" for every resource type (ConfigAdminManager.preprocess checks it first).

Broker resources (this broker's id, or "" for the cluster-wide default): the operations
apply to the stored dynamic configs (APPEND/SUBTRACT on LIST configs only), the result is
checked as in AlterConfigs (broker.config.broker_configs) and stored; a DELETE returns a config
to its static or default value. The broker does not act on dynamic values yet.

GROUP resources (Kafka 4.0's GroupConfig, broker.config.group_configs): SET and DELETE on the
group's stored overrides, APPEND/SUBTRACT -> INVALID_CONFIG (no group config is a list); the
group's resulting set is checked against GroupConfig's definitions and the broker's bounds
(INVALID_CONFIG with Kafka's messages) and stored; the group needs not exist. KIP-848
consumer groups act on consumer.session.timeout.ms and consumer.heartbeat.interval.ms.

BROKER_LOGGER: SET/DELETE of a Python logger's level (root included), as Kafka sets log4j
levels; an unknown logger -> INVALID_CONFIG.
Authorization (with an authorizer): ALTER_CONFIGS on the topic, group or cluster, else
TOPIC_/GROUP_/CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

import logging

from broker.config import group_configs
from broker.config.broker_configs import apply_operations
from broker.config.topic_configs import incremental
from broker.core.request_context import RequestContext
from broker.handlers._admin import RESOURCE_BROKER_LOGGER
from broker.handlers._alter import alter, duplicate_resources, node_id_error, result
from broker.handlers._config_access import denied
from broker.handlers._leadership import request_node
from broker.security.acl import ALTER_CONFIGS
from protocol.errors import ErrorCode
from protocol.messages.incremental_alter_configs import INCREMENTAL_ALTER_CONFIGS
from protocol.schema import Message

API = INCREMENTAL_ALTER_CONFIGS
MIN_VERSION = 0
MAX_VERSION = 1

# log4j level names as Kafka accepts them, mapped onto Python's levels.
_LEVELS = {
    "TRACE": logging.DEBUG,
    "DEBUG": logging.DEBUG,
    "INFO": logging.INFO,
    "WARN": logging.WARNING,
    "ERROR": logging.ERROR,
    "FATAL": logging.CRITICAL,
}


def _loggers(ctx: RequestContext, resource: Message, validate_only: bool) -> Message:
    reason = node_id_error(resource.resource_name, request_node(ctx))
    if reason is not None or resource.resource_name == "":
        return result(resource, ErrorCode.INVALID_REQUEST, reason or "A broker id is required")
    changes: list[tuple[logging.Logger, int]] = []
    for config in resource.configs:
        name = config.name
        known = name == "root" or name in logging.Logger.manager.loggerDict
        if not known:
            return result(resource, ErrorCode.INVALID_CONFIG, f"Logger {name} does not exist!")
        logger = logging.getLogger() if name == "root" else logging.getLogger(name)
        if config.config_operation == 0:
            level = _LEVELS.get((config.value or "").upper())
            if level is None:
                return result(
                    resource,
                    ErrorCode.INVALID_CONFIG,
                    f"Cannot set the log level of {name} to {config.value} as it is not a "
                    f"supported log level. Valid log levels are {', '.join(_LEVELS)}",
                )
            changes.append((logger, level))
        elif config.config_operation == 1:
            if name == "root":
                return result(
                    resource,
                    ErrorCode.INVALID_REQUEST,
                    "Removing the log level of the root logger is not allowed",
                )
            changes.append((logger, logging.NOTSET))
        else:
            return result(
                resource,
                ErrorCode.INVALID_REQUEST,
                f"Operation {config.config_operation} is not allowed for the BROKER_LOGGER "
                "resource",
            )
    if not validate_only:
        for logger, new_level in changes:
            logger.setLevel(new_level)
    return result(resource, ErrorCode.NONE, None)


def handle(ctx: RequestContext, request: Message) -> Message:
    duplicates = duplicate_resources(request.resources)
    validate_only = bool(request.validate_only)
    responses: list[Message] = []
    for resource in request.resources:
        if (resource.resource_type, resource.resource_name) in duplicates:
            responses.append(
                result(
                    resource, ErrorCode.INVALID_REQUEST, "Each resource must appear at most once."
                )
            )
            continue
        error = denied(ctx, ALTER_CONFIGS, resource.resource_type, resource.resource_name)
        if error is not None:
            responses.append(result(resource, error, None))
            continue
        null = [c.name for c in resource.configs if c.config_operation != 1 and c.value is None]
        if null:
            responses.append(
                result(
                    resource,
                    ErrorCode.INVALID_REQUEST,
                    f"Null value not supported for : {', '.join(null)}",
                )
            )
            continue
        if resource.resource_type == RESOURCE_BROKER_LOGGER:
            responses.append(_loggers(ctx, resource, validate_only))
            continue
        operations: list[tuple[str, int, str | None]] = [
            (c.name, c.config_operation, c.value) for c in resource.configs
        ]

        def change(
            current: dict[str, str], ops: list[tuple[str, int, str | None]] = operations
        ) -> dict[str, str | None]:
            return incremental(current, ops)

        def change_broker(
            current: dict[str, str], ops: list[tuple[str, int, str | None]] = operations
        ) -> dict[str, str]:
            return apply_operations(current, ops)

        def change_group(
            current: dict[str, str], ops: list[tuple[str, int, str | None]] = operations
        ) -> dict[str, str]:
            return group_configs.apply_operations(current, ops)

        responses.append(
            alter(
                ctx,
                resource,
                [c.name for c in resource.configs],
                change,
                validate_only,
                change_broker,
                change_group,
            )
        )
    return Message(throttle_time_ms=0, responses=responses)
