"""AlterConfigs, versions 0-2 (the legacy, whole-set replacement).

Behaviour: a topic's overrides become exactly the configs given (those not listed return to
their defaults), validated as Kafka's LogConfig does: an unknown name or invalid value ->
INVALID_CONFIG, a null value -> INVALID_REQUEST, a repeated key or resource ->
INVALID_REQUEST, a missing topic -> UNKNOWN_TOPIC_OR_PARTITION. Changes take effect at once
(broker.core.state.set_topic_configs) and persist across restarts. validate_only checks only.

Broker resources (this broker's id, or "" for the cluster-wide default): the dynamic
configs become exactly those given, checked as Kafka's DynamicBrokerConfig.validateConfigs
(broker.config.broker_configs.check_dynamic: a non-dynamic config, a bare SSL store config, a value
of the wrong type, a per-broker config at the default level -> INVALID_REQUEST with Kafka's
message), stored durably and described; the broker does not act on them yet. Another
broker id -> INVALID_REQUEST. GROUP resources: the group's overrides become exactly those
given, checked as IncrementalAlterConfigs checks them (broker.config.group_configs) and stored.
BROKER_LOGGER and other types -> INVALID_REQUEST, as Kafka.
Authorization (with an authorizer): ALTER_CONFIGS on the topic, group or cluster,
else TOPIC_/GROUP_/CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from broker.core.request_context import RequestContext
from broker.handlers._alter import alter, duplicate_resources, result
from broker.handlers._config_access import denied
from broker.security import acl
from protocol.errors import ErrorCode
from protocol.messages.alter_configs import ALTER_CONFIGS
from protocol.schema import Message

API = ALTER_CONFIGS
MIN_VERSION = 0
MAX_VERSION = 2


def handle(ctx: RequestContext, request: Message) -> Message:
    duplicates = duplicate_resources(request.resources)
    responses: list[Message] = []
    for resource in request.resources:
        if (resource.resource_type, resource.resource_name) in duplicates:
            responses.append(
                result(
                    resource, ErrorCode.INVALID_REQUEST, "Each resource must appear at most once."
                )
            )
            continue
        error = denied(ctx, acl.ALTER_CONFIGS, resource.resource_type, resource.resource_name)
        if error is not None:
            responses.append(result(resource, error, None))
            continue
        null = [c.name for c in resource.configs if c.value is None]
        if null:
            responses.append(
                result(
                    resource,
                    ErrorCode.INVALID_REQUEST,
                    f"Null value not supported for : {', '.join(null)}",
                )
            )
            continue
        given: dict[str, str | None] = {c.name: c.value for c in resource.configs}

        def change(
            _current: dict[str, str], given: dict[str, str | None] = given
        ) -> dict[str, str | None]:
            # The legacy API replaces the whole set: unlisted overrides are dropped.
            return dict(given)

        def replace_broker(
            _current: dict[str, str], given: dict[str, str | None] = given
        ) -> dict[str, str]:
            return {k: v for k, v in given.items() if v is not None}

        responses.append(
            alter(
                ctx,
                resource,
                [c.name for c in resource.configs],
                change,
                bool(request.validate_only),
                replace_broker,
                replace_broker,
            )
        )
    return Message(throttle_time_ms=0, responses=responses)
