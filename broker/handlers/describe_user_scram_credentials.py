"""DescribeUserScramCredentials, version 0.

Behaviour: as Kafka 4.0's ScramImage.describe over the stored credentials
(AlterUserScramCredentials): users null or empty = every user with a credential; a named
user without one -> RESOURCE_NOT_FOUND "Attempt to describe a user credential that does not
exist: <user>"; a user named twice -> DUPLICATE_RESOURCE "Cannot describe SCRAM credentials
for the same user twice in a single request: <user>" (once). A found user lists each
mechanism (1 = SCRAM-SHA-256, 2 = SCRAM-SHA-512) with its iterations. Messages Kafka leaves
unset (the top level, found users) are "", the field's default there.
Deviations: results come in request order, then user name order (Kafka's follow its hash
map).
Authorization (with an authorizer): DESCRIBE on the cluster, else CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from broker.core.request_context import RequestContext
from broker.handlers._acl_requests import cluster_allowed
from broker.security.acl import DESCRIBE
from protocol.errors import ErrorCode
from protocol.messages.describe_user_scram_credentials import DESCRIBE_USER_SCRAM_CREDENTIALS
from protocol.schema import Message

API = DESCRIBE_USER_SCRAM_CREDENTIALS
MIN_VERSION = 0
MAX_VERSION = 0


def handle(ctx: RequestContext, request: Message) -> Message:
    if not cluster_allowed(ctx, DESCRIBE):
        # DescribeUserScramCredentialsRequest.getErrorResponse: the top-level error only.
        return Message(
            throttle_time_ms=0,
            error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            error_message=None,
            results=[],
        )
    credentials = ctx.state.scram_credentials.all()
    if not request.users:
        duplicated = dict.fromkeys(sorted({user for user, _ in credentials}), False)
    else:
        duplicated = {}
        for wanted in request.users:
            duplicated[wanted.name] = wanted.name in duplicated
    results = []
    for user, twice in duplicated.items():
        if twice:
            results.append(
                Message(
                    user=user,
                    error_code=ErrorCode.DUPLICATE_RESOURCE,
                    error_message="Cannot describe SCRAM credentials for the same user twice "
                    f"in a single request: {user}",
                    credential_infos=[],
                )
            )
            continue
        infos = [
            Message(mechanism=mechanism, iterations=cred.iterations)
            for (name, mechanism), cred in sorted(credentials.items())
            if name == user
        ]
        if infos:
            results.append(
                Message(user=user, error_code=0, error_message="", credential_infos=infos)
            )
        else:
            results.append(
                Message(
                    user=user,
                    error_code=ErrorCode.RESOURCE_NOT_FOUND,
                    error_message="Attempt to describe a user credential that does not exist: "
                    + user,
                    credential_infos=[],
                )
            )
    return Message(throttle_time_ms=0, error_code=0, error_message="", results=results)
