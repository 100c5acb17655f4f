"""DescribeAcls, versions 1-3 (Kafka 4.0 removed v0, KIP-896: a v0 request closes the
connection).

Behaviour: as Kafka's AclApis.handleDescribeAcls. DESCRIBE on the cluster first
(CLUSTER_AUTHORIZATION_FAILED). Without an authorizer: SECURITY_DISABLED "No Authorizer is
configured on the broker". With StandardAuthorizer: the ACLs matching the filter
(AclBindingFilter: ANY matches every type/pattern/operation/permission, a null name,
principal or host matches any, MATCH names a resource and finds the ACLs applying to it),
grouped by resource (DescribeAclsResponse.aclsResources); an unknown filter element ->
INVALID_REQUEST.
Deviations: resources and ACLs come sorted (Kafka's follow its hash sets).
"""

from __future__ import annotations

from itertools import groupby

from broker.core.request_context import RequestContext
from broker.handlers._acl_requests import CLUSTER_DENIED, acl_filter, cluster_allowed
from broker.security.acl import DESCRIBE
from protocol.errors import ErrorCode
from protocol.messages.describe_acls import DESCRIBE_ACLS
from protocol.schema import Message

API = DESCRIBE_ACLS
MIN_VERSION = 1
MAX_VERSION = 3


def _answer(code: int, message: str | None, resources: list[Message]) -> Message:
    return Message(throttle_time_ms=0, error_code=code, error_message=message, resources=resources)


def handle(ctx: RequestContext, request: Message) -> Message:
    if not cluster_allowed(ctx, DESCRIBE):
        return _answer(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, CLUSTER_DENIED, [])
    authorizer = ctx.state.authorizer
    if authorizer is None:
        return _answer(ErrorCode.SECURITY_DISABLED, "No Authorizer is configured on the broker", [])
    wanted = acl_filter(request)
    problem = wanted.problem()
    if problem is not None:
        return _answer(ErrorCode.INVALID_REQUEST, problem, [])
    resources = [
        Message(
            resource_type=rtype,
            resource_name=name,
            pattern_type=pattern,
            acls=[
                Message(
                    principal=acl.principal,
                    host=acl.host,
                    operation=acl.operation,
                    permission_type=acl.permission_type,
                )
                for acl in acls
            ],
        )
        for (rtype, name, pattern), acls in groupby(
            authorizer.acls(wanted), lambda a: (a.resource_type, a.resource_name, a.pattern_type)
        )
    ]
    return _answer(0, None, resources)
