"""AlterClientQuotas, versions 0-1.

Behaviour: as Kafka 4.0's ClientQuotaControlManager.alterClientQuotas. An entry's entity is a
map (a type named twice: the last name wins, as AlterClientQuotasRequest.entries builds it).
Checks per entity, each failure INVALID_REQUEST with Kafka's message: empty entity, type other
than user/client-id/ip, empty name, ip combined with user/client-id, an ip that is neither a
literal nor resolvable, then each set value: unknown key for the entity type, value <= 0,
too large or fractional for an integral key (producer/consumer_byte_rate are LONGs,
connection_creation_rate an INT). Removals are not checked; removing an absent key is a no-op.
A quota key named twice, or an entity named again, makes that entity's answer "Ignoring
duplicate entity ..." (Kafka overwrites the first result, while the first alteration's
changes still apply). Valid entities are applied together and stored durably
(storage.client_quota_store) before the answer; validate_only stores nothing. One answer per
distinct entity.
Deviations: quotas are stored and described, not enforced. Answers come in request order
(Kafka's follow its hash map); the entity text in the duplicate messages lists types in
sorted order.
Authorization (with an authorizer): ALTER_CONFIGS on the cluster, else
CLUSTER_AUTHORIZATION_FAILED for every entry.
"""

from __future__ import annotations

import asyncio
import logging
import socket

from broker.config.client_quotas import check_entity, check_value, is_ip_literal, keys_for
from broker.core.request_context import RequestContext
from broker.handlers._acl_requests import cluster_allowed
from broker.security.acl import ALTER_CONFIGS
from protocol.errors import ErrorCode
from protocol.messages.alter_client_quotas import ALTER_CLIENT_QUOTAS
from protocol.schema import Message
from storage.client_quota_store import Entity, entity_key

API = ALTER_CLIENT_QUOTAS
MIN_VERSION = 0
MAX_VERSION = 1

log = logging.getLogger(__name__)


def _describe(entity: Entity) -> str:
    """Kafka's ClientQuotaEntity.toString."""
    inner = ", ".join(f"{t}={n}" for t, n in entity)
    return f"ClientQuotaEntity(entries={{{inner}}})"


async def _resolvable(host: str | None) -> bool:
    """ClientQuotaControlManager.isValidIpEntity: null (default), a literal or a known host."""
    if host is None or is_ip_literal(host):
        return True
    try:
        await asyncio.get_running_loop().getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return False
    return True


async def handle(ctx: RequestContext, request: Message) -> Message:
    if not cluster_allowed(ctx, ALTER_CONFIGS):
        return Message(
            throttle_time_ms=0,
            entries=[
                Message(
                    error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                    error_message=None,
                    entity=entry.entity,
                )
                for entry in request.entries
            ],
        )
    store = ctx.state.client_quotas
    updated = store.all()
    results: dict[Entity, tuple[int, str | None]] = {}
    for entry in request.entries:
        entity_map = {e.entity_type: e.entity_name for e in entry.entity}
        key = entity_key(entity_map)
        changes: dict[str, float | None] = {}
        duplicate_key = False
        for op in entry.ops:
            duplicate_key = duplicate_key or op.key in changes
            changes.setdefault(op.key, None if op.remove else op.value)
        if duplicate_key or key in results:
            results[key] = (
                ErrorCode.INVALID_REQUEST,
                f"Ignoring duplicate entity {_describe(key)}",
            )
            continue
        problem = check_entity(entity_map)
        if problem is None:
            keys = keys_for(entity_map, await _resolvable(entity_map.get("ip")))
            if isinstance(keys, str):
                problem = keys
            else:
                for name, value in changes.items():
                    if value is not None:
                        problem = check_value(keys, name, value)
                        if problem is not None:
                            break
        if problem is not None:
            results[key] = (ErrorCode.INVALID_REQUEST, problem)
            continue
        values = updated.setdefault(key, {})
        for name, value in changes.items():
            if value is None:
                values.pop(name, None)
            else:
                values[name] = value
        results[key] = (ErrorCode.NONE, None)
    if not request.validate_only and updated != store.all():
        store.replace(updated)
        log.info("client quotas altered by %s", ctx.describe())
    return Message(
        throttle_time_ms=0,
        entries=[
            Message(
                error_code=code,
                error_message=message,
                entity=[Message(entity_type=t, entity_name=n) for t, n in key],
            )
            for key, (code, message) in results.items()
        ],
    )
