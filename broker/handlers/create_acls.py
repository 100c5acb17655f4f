"""CreateAcls, versions 1-3 (Kafka 4.0 removed v0, KIP-896: a v0 request closes the
connection).

Behaviour: as Kafka's AclApis.handleCreateAcls with StandardAuthorizer. ALTER on the cluster
first (every result CLUSTER_AUTHORIZATION_FAILED). Without an authorizer every result is
SECURITY_DISABLED "No Authorizer is configured.". A principal that is not ``Type:name``
fails the whole request (CreateAclsRequest.aclBinding throws: UNKNOWN_SERVER_ERROR, no
message, for every creation). Each ACL is checked as AclControlManager.validateNewAcl
(INVALID_REQUEST "Invalid resourceType ANY", "Invalid patternType MATCH", ...; a CLUSTER
resource must be named kafka-cluster; an empty name); the valid ones are stored durably
(existing ones are kept as they are) before the answer, one result per creation in order.
"""

from __future__ import annotations

import logging

from broker.core.request_context import RequestContext
from broker.handlers._acl_requests import CLUSTER_DENIED, NO_AUTHORIZER, cluster_allowed
from broker.security.acl import ALTER, describe, validate_new
from protocol.errors import ErrorCode
from protocol.messages.create_acls import CREATE_ACLS
from protocol.schema import Message
from storage.acl_store import StoredAcl

API = CREATE_ACLS
MIN_VERSION = 1
MAX_VERSION = 3

log = logging.getLogger(__name__)


def _all(request: Message, code: int, message: str | None) -> Message:
    results = [Message(error_code=code, error_message=message) for _ in request.creations]
    return Message(throttle_time_ms=0, results=results)


def handle(ctx: RequestContext, request: Message) -> Message:
    if not cluster_allowed(ctx, ALTER):
        return _all(request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, CLUSTER_DENIED)
    authorizer = ctx.state.authorizer
    if authorizer is None:
        return _all(request, ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER)
    if any(":" not in c.principal or c.principal.startswith(":") for c in request.creations):
        return _all(request, ErrorCode.UNKNOWN_SERVER_ERROR, None)
    acls = [
        StoredAcl(
            c.resource_type,
            c.resource_name,
            c.resource_pattern_type,
            c.principal,
            c.host,
            c.operation,
            c.permission_type,
        )
        for c in request.creations
    ]
    problems = [validate_new(acl) for acl in acls]
    valid = [acl for acl, problem in zip(acls, problems, strict=True) if problem is None]
    if valid:
        authorizer.create(valid)
        for acl in valid:
            log.info("ACL created by %s (%s): %s", ctx.principal, ctx.describe(), describe(acl))
    results = [
        Message(error_code=0, error_message=None)
        if problem is None
        else Message(error_code=ErrorCode.INVALID_REQUEST, error_message=problem)
        for problem in problems
    ]
    return Message(throttle_time_ms=0, results=results)
