"""DeleteAcls, versions 1-3 (Kafka 4.0 removed v0, KIP-896: a v0 request closes the
connection).

Behaviour: as Kafka's AclApis.handleDeleteAcls with StandardAuthorizer. ALTER on the
cluster first (every filter result CLUSTER_AUTHORIZATION_FAILED). Without an authorizer
every filter result is SECURITY_DISABLED "No Authorizer is configured.". Each filter
(AclControlManager.validateFilter: unknown elements -> INVALID_REQUEST) lists the ACLs it
matched, all removed durably before the answer.
Deviations: matching ACLs come sorted (Kafka's follow its hash sets).
"""

from __future__ import annotations

import logging

from broker.core.request_context import RequestContext
from broker.handlers._acl_requests import (
    CLUSTER_DENIED,
    NO_AUTHORIZER,
    acl_filter,
    cluster_allowed,
)
from broker.security.acl import ALTER, describe
from protocol.errors import ErrorCode
from protocol.messages.delete_acls import DELETE_ACLS
from protocol.schema import Message

API = DELETE_ACLS
MIN_VERSION = 1
MAX_VERSION = 3

log = logging.getLogger(__name__)


def _all(request: Message, code: int, message: str | None) -> Message:
    results = [
        Message(error_code=code, error_message=message, matching_acls=[]) for _ in request.filters
    ]
    return Message(throttle_time_ms=0, filter_results=results)


def handle(ctx: RequestContext, request: Message) -> Message:
    if not cluster_allowed(ctx, ALTER):
        return _all(request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, CLUSTER_DENIED)
    authorizer = ctx.state.authorizer
    if authorizer is None:
        return _all(request, ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER)
    filters = [acl_filter(f) for f in request.filters]
    problems = [f.problem() for f in filters]
    deleted = iter(
        authorizer.delete(f for f, p in zip(filters, problems, strict=True) if p is None)
    )
    results = []
    for problem in problems:
        if problem is not None:
            results.append(
                Message(
                    error_code=ErrorCode.INVALID_REQUEST, error_message=problem, matching_acls=[]
                )
            )
            continue
        matched = next(deleted)
        for acl in matched:
            log.info("ACL deleted by %s (%s): %s", ctx.principal, ctx.describe(), describe(acl))
        results.append(
            Message(
                error_code=0,
                error_message=None,
                matching_acls=[
                    Message(
                        error_code=0,
                        error_message=None,
                        resource_type=acl.resource_type,
                        resource_name=acl.resource_name,
                        pattern_type=acl.pattern_type,
                        principal=acl.principal,
                        host=acl.host,
                        operation=acl.operation,
                        permission_type=acl.permission_type,
                    )
                    for acl in matched
                ],
            )
        )
    return Message(throttle_time_ms=0, filter_results=results)
