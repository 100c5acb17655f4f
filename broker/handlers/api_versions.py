"""ApiVersions, versions 0-4.

The list is derived from the handler registry in ascending key order. v3+ answers end with
the tagged fields Kafka 4.0 sends: supported_features (tag 0), finalized_features_epoch
(tag 1) and finalized_features (tag 2); zk_migration_ready (tag 3) is omitted, as Kafka
omits it. Old librdkafka fails to parse a v3 response whose tagged section differs.
metadata.version, group.version (level 1: KIP-848 consumer groups, served by
ConsumerGroupHeartbeat/ConsumerGroupDescribe) and transaction.version (2: Produce v12, EndTxn
v5 and TxnOffsetCommit v5 work, so Java 4.x uses transactions v2) are finalized, as on a fresh
Kafka 4.0 cluster. share.version and streams.version are listed only when
minikafka.share.version / minikafka.streams.version switch them on (Kafka 4.4.0's levels).
Below v4, supported features whose minimum is 0 are left out
(ApiVersionsResponse.maybeFilterSupportedFeatureKeys, KAFKA-17492: older clients fail to
parse them), as Kafka does.
An unknown version is answered by broker.net.connection with a v0 body and UNSUPPORTED_VERSION.
v3+ requests name the client software (KIP-511): a name or version that does not match
Kafka's pattern (ApiVersionsRequest.isValid, empty strings included) gets INVALID_REQUEST
with no api keys, as Kafka answers it.

Every client's first request is this one, and its answer (some 70 api keys) changes only
with the request version, what the dispatcher advertises and the share/streams switches: it
is encoded once per version and kept (``_encoded``), made anew when any of them changes.
"""

from __future__ import annotations

import re
import weakref

from broker.core.request_context import RequestContext
from broker.core.state import ApiTable
from protocol import codec
from protocol.codec import Encoded
from protocol.errors import ErrorCode
from protocol.messages.api_versions import API_VERSIONS
from protocol.schema import Message

API = API_VERSIONS
MIN_VERSION = 0
MAX_VERSION = 4

# Kafka 4.0's metadata.version range and level (4.0-IV3 = 25).
METADATA_VERSION_MIN = 7
METADATA_VERSION_MAX = 25
FINALIZED_FEATURES_EPOCH = 1
# Kafka 4.0's group.version range and finalized level (GroupVersion.GV_1: KIP-848 groups).
GROUP_VERSION_MIN = 0
GROUP_VERSION_MAX = 1
# TransactionVersion: supported 0-2, finalized 2 (TV_2, the 4.0 default for new clusters).
TRANSACTION_VERSION_MAX = 2
# share.version (KIP-932 share groups): supported 0-1 and finalized at
# minikafka.share.version, listed only when that is 1 (a Kafka 4.0 cluster has no share
# groups, and our default answer stays Kafka 4.0's).
SHARE_VERSION_MAX = 1
# streams.version (KIP-1071 streams groups): supported 0-1 and finalized at
# minikafka.streams.version, listed only when that is 1, after share.version as Kafka 4.4.0
# lists it.
STREAMS_VERSION_MAX = 1
# ApiVersionsResponse.maybeFilterSupportedFeatureKeys: below v4 no feature with minimum 0.
FEATURE_LEVEL_0_SINCE = 4

# ApiVersionsRequest.SOFTWARE_NAME_VERSION_PATTERN.
_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


def _valid_software(request: Message) -> bool:
    return all(
        _SOFTWARE.fullmatch(value)
        for value in (request.client_software_name, request.client_software_version)
    )


def _supported_features(version: int, share_version: int, streams_version: int) -> list[Message]:
    """Kafka lists a supported feature whose range starts at 0 only to v4+ requests (older
    clients reject a minimum of 0), so group.version 0-1 and transaction.version 0-2 appear
    at v4 only, as recorded from Kafka 4.0.0."""
    features = [
        Message(
            name="metadata.version",
            min_version=METADATA_VERSION_MIN,
            max_version=METADATA_VERSION_MAX,
        )
    ]
    if version >= FEATURE_LEVEL_0_SINCE:
        features.insert(
            0,
            Message(
                name="group.version", min_version=GROUP_VERSION_MIN, max_version=GROUP_VERSION_MAX
            ),
        )
        if share_version:
            features.append(
                Message(name="share.version", min_version=0, max_version=SHARE_VERSION_MAX)
            )
        if streams_version:
            features.append(
                Message(name="streams.version", min_version=0, max_version=STREAMS_VERSION_MAX)
            )
        features.append(
            Message(name="transaction.version", min_version=0, max_version=TRANSACTION_VERSION_MAX)
        )
    return features


def _finalized_features(share_version: int, streams_version: int) -> list[Message]:
    # Kafka 4.4.0's order (its feature map's): share.version before metadata.version here,
    # after it in the supported features.
    levels = [
        ("group.version", GROUP_VERSION_MAX),
        ("share.version", share_version),
        ("metadata.version", METADATA_VERSION_MAX),
        ("streams.version", streams_version),
        ("transaction.version", TRANSACTION_VERSION_MAX),
    ]
    return [
        Message(name=name, max_version_level=level, min_version_level=level)
        for name, level in levels
        if level
    ]


def api_version_entries(apis: ApiTable) -> list[Message]:
    """ApiVersions' api_keys: every API served, as the dispatcher advertises it (also the
    v0 body of an UNSUPPORTED_VERSION answer, which the connection writes)."""
    return [Message(api_key=k, min_version=lo, max_version=hi) for k, lo, hi in apis.advertised()]


def answer(apis: ApiTable, version: int, share_version: int, streams_version: int) -> Message:
    """The answer to a valid ApiVersions request of ``version``."""
    return Message(
        error_code=ErrorCode.NONE,
        api_keys=api_version_entries(apis),
        throttle_time_ms=0,
        supported_features=_supported_features(version, share_version, streams_version),
        finalized_features_epoch=FINALIZED_FEATURES_EPOCH,
        finalized_features=_finalized_features(share_version, streams_version),
    )


# Per dispatcher (a simulated cluster's nodes, brokers embedded in one process, each have
# their own): (version, share.version, streams.version) -> the advertised list the answer
# was made from (kept, so it is compared by identity: Dispatcher.advertised() returns the
# same list until it changes) and the answer encoded.
_CACHE: weakref.WeakKeyDictionary[
    ApiTable, dict[tuple[int, int, int], tuple[list[tuple[int, int, int]], Encoded]]
] = weakref.WeakKeyDictionary()


def _encoded(apis: ApiTable, version: int, share_version: int, streams_version: int) -> Encoded:
    """answer() encoded, from the cache while what it is made of has not changed."""
    advertised = apis.advertised()
    cached = _CACHE.setdefault(apis, {})
    key = (version, share_version, streams_version)
    entry = cached.get(key)
    if entry is None or entry[0] is not advertised:
        body = codec.encode_response(
            API, version, answer(apis, version, share_version, streams_version)
        )
        entry = cached[key] = (advertised, Encoded(body))
    return entry[1]


def handle(ctx: RequestContext, request: Message) -> Message | Encoded:
    if ctx.version >= 3 and not _valid_software(request):
        return Message(error_code=ErrorCode.INVALID_REQUEST, api_keys=[], throttle_time_ms=0)
    if ctx.version >= 3:
        ctx.state.client_software[ctx.peer] = (
            ctx.client_id or "",
            request.client_software_name,
            request.client_software_version,
        )
    config = ctx.state.config
    return _encoded(ctx.state.dispatcher, ctx.version, config.share_version, config.streams_version)
