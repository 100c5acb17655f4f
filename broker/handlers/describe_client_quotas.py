"""DescribeClientQuotas, versions 0-1.

Behaviour: the stored client quotas (AlterClientQuotas) that match the filter, as Kafka's
ClientQuotasImage.describe: components with match type 0 (exact name), 1 (the default entity)
or 2 (any name of that type); strict = the entity has no other types. A bad filter answers
INVALID_REQUEST with Kafka's message (UNSUPPORTED_VERSION for an entity type other than
user, client-id, ip) and entries null. Success leaves error_message "", as Kafka (it never
sets the field, whose default is "").
Deviations: entries come in a stable order (Kafka's follow its hash map).
Authorization (with an authorizer): DESCRIBE_CONFIGS on the cluster, else
CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from broker.config.client_quotas import InvalidFilter, parse_filter
from broker.core.request_context import RequestContext
from broker.handlers._acl_requests import cluster_allowed
from broker.security.acl import DESCRIBE_CONFIGS
from protocol.errors import ErrorCode
from protocol.messages.describe_client_quotas import DESCRIBE_CLIENT_QUOTAS
from protocol.schema import Message

API = DESCRIBE_CLIENT_QUOTAS
MIN_VERSION = 0
MAX_VERSION = 1


def handle(ctx: RequestContext, request: Message) -> Message:
    if not cluster_allowed(ctx, DESCRIBE_CONFIGS):
        return Message(
            throttle_time_ms=0,
            error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            error_message=None,
            entries=None,
        )
    try:
        wanted = parse_filter(
            [(c.entity_type, c.match_type, c.match) for c in request.components], request.strict
        )
    except InvalidFilter as exc:
        code = ErrorCode.UNSUPPORTED_VERSION if exc.unsupported else ErrorCode.INVALID_REQUEST
        return Message(throttle_time_ms=0, error_code=code, error_message=exc.message, entries=None)
    entries = []
    for entity, values in sorted(ctx.state.client_quotas.all().items(), key=lambda e: repr(e[0])):
        if wanted.matches(dict(entity)):
            entries.append(
                Message(
                    entity=[Message(entity_type=t, entity_name=n) for t, n in entity],
                    values=[Message(key=k, value=v) for k, v in sorted(values.items())],
                )
            )
    return Message(throttle_time_ms=0, error_code=0, error_message="", entries=entries)
