"""AlterUserScramCredentials, version 0.

Behaviour: as Kafka 4.0's ScramControlManager.alterCredentials, which stores credentials
whether or not a SASL listener uses them. Deletions first, then upsertions; a user named a
second time (in either list) -> DUPLICATE_RESOURCE "A user credential cannot be altered twice
in the same request" and none of that user's changes apply. Checks: empty user name ->
UNACCEPTABLE_CREDENTIAL "Username must not be empty"; mechanism other than 1 (SCRAM-SHA-256)
or 2 (SCRAM-SHA-512) -> UNSUPPORTED_SASL_MECHANISM "Unknown SCRAM mechanism"; deleting a
credential that does not exist -> RESOURCE_NOT_FOUND; iterations below 4096 or above 16384 ->
UNACCEPTABLE_CREDENTIAL "Too few/many iterations". An upsertion stores what Kafka's
UserScramCredentialRecord holds: salt, iterations, stored key H(HMAC(salted password,
"Client Key")) and server key HMAC(salted password, "Server Key") (RFC 5802; never the salted
password), durably (storage.scram_credential_store) before the answer. Results: deletions,
upsertions, then errors.
SASL/SCRAM logins (broker.security.sasl_scram) read them at once.
Deviations: result order within each group follows the request (Kafka's follows its hash
maps).
Authorization (with an authorizer): ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED
for every user named.
"""

from __future__ import annotations

import hashlib
import hmac
import logging

from broker.core.request_context import RequestContext
from broker.handlers._acl_requests import cluster_allowed
from broker.security.acl import ALTER
from protocol.errors import ErrorCode
from protocol.messages.alter_user_scram_credentials import ALTER_USER_SCRAM_CREDENTIALS
from protocol.schema import Message
from storage.scram_credential_store import ScramCredential

API = ALTER_USER_SCRAM_CREDENTIALS
MIN_VERSION = 0
MAX_VERSION = 0

log = logging.getLogger(__name__)

# ScramMechanism type -> (hash name, min iterations); ScramControlManager.MAX_ITERATIONS.
MECHANISMS = {1: ("sha256", 4096), 2: ("sha512", 4096)}
MAX_ITERATIONS = 16384
TWICE = "A user credential cannot be altered twice in the same request"


def _check_name_and_mechanism(name: str, mechanism: int) -> tuple[int, str] | None:
    if not name:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
    if mechanism not in MECHANISMS:
        return ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
    return None


def _check_upsertion(upsertion: Message) -> tuple[int, str] | None:
    problem = _check_name_and_mechanism(upsertion.name, upsertion.mechanism)
    if problem is not None:
        return problem
    if upsertion.iterations < MECHANISMS[upsertion.mechanism][1]:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"
    if upsertion.iterations > MAX_ITERATIONS:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"
    return None


def _credential(upsertion: Message) -> ScramCredential:
    """ScramFormatter: stored key = H(ClientKey), server key = HMAC(salted, "Server Key")."""
    digest = MECHANISMS[upsertion.mechanism][0]
    salted = bytes(upsertion.salted_password)
    client_key = hmac.new(salted, b"Client Key", digest).digest()
    return ScramCredential(
        salt=bytes(upsertion.salt),
        stored_key=hashlib.new(digest, client_key).digest(),
        server_key=hmac.new(salted, b"Server Key", digest).digest(),
        iterations=upsertion.iterations,
    )


def handle(ctx: RequestContext, request: Message) -> Message:
    if not cluster_allowed(ctx, ALTER):
        # AlterUserScramCredentialsRequest.getErrorResponse: every user named, this error.
        users = dict.fromkeys(
            [d.name for d in request.deletions] + [u.name for u in request.upsertions]
        )
        return Message(
            throttle_time_ms=0,
            results=[
                Message(
                    user=u, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, error_message=None
                )
                for u in users
            ],
        )
    store = ctx.state.scram_credentials
    existing = store.all()
    deletions: dict[str, Message] = {}
    upsertions: dict[str, Message] = {}
    errors: dict[str, tuple[int, str]] = {}
    for deletion in request.deletions:
        if deletion.name in errors:
            continue
        if deletions.pop(deletion.name, None) is not None:
            errors[deletion.name] = (ErrorCode.DUPLICATE_RESOURCE, TWICE)
            continue
        problem = _check_name_and_mechanism(deletion.name, deletion.mechanism)
        if problem is None and (deletion.name, deletion.mechanism) not in existing:
            problem = (
                ErrorCode.RESOURCE_NOT_FOUND,
                "Attempt to delete a user credential that does not exist",
            )
        if problem is not None:
            errors[deletion.name] = problem
        else:
            deletions[deletion.name] = deletion
    for upsertion in request.upsertions:
        if upsertion.name in errors:
            continue
        if (
            deletions.pop(upsertion.name, None) is not None
            or upsertions.pop(upsertion.name, None) is not None
        ):
            errors[upsertion.name] = (ErrorCode.DUPLICATE_RESOURCE, TWICE)
            continue
        problem = _check_upsertion(upsertion)
        if problem is not None:
            errors[upsertion.name] = problem
        else:
            upsertions[upsertion.name] = upsertion
    updated = dict(existing)
    for deletion in deletions.values():
        del updated[(deletion.name, deletion.mechanism)]
    for upsertion in upsertions.values():
        updated[(upsertion.name, upsertion.mechanism)] = _credential(upsertion)
    if deletions or upsertions:
        store.replace(updated)
        log.info(
            "SCRAM credentials altered by %s: %d upserted, %d deleted",
            ctx.describe(),
            len(upsertions),
            len(deletions),
        )
    results = [Message(user=name, error_code=0, error_message=None) for name in deletions]
    results += [Message(user=name, error_code=0, error_message=None) for name in upsertions]
    results += [
        Message(user=name, error_code=code, error_message=message)
        for name, (code, message) in errors.items()
    ]
    return Message(throttle_time_ms=0, results=results)
