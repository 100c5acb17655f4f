"""DeleteTopics, versions 1-6.

Behaviour (Kafka's ControllerApis.deleteTopics): v1-5 name topics, v6 by name or by topic
id. A name or id given twice -> INVALID_REQUEST; both or neither of name and id ->
INVALID_REQUEST; an unknown name -> UNKNOWN_TOPIC_OR_PARTITION, an unknown id ->
UNKNOWN_TOPIC_ID. A deleted topic's partition directories are renamed ``*-delete`` (the
name capped at 255 bytes, as Kafka's logDirNameWithSuffixCappedLength) before the answer
and removed log.segment.delete.delay.ms later (Kafka's LogManager.asyncDelete/deleteLogs),
so fetch responses already being sent from them complete (storage.store.delete_topic). Its
configs go too; fetches and produces for it get UNKNOWN_TOPIC_OR_PARTITION from then on,
and the name can be re-created at once. When the disk refuses (a rename fails) the topic
answers KAFKA_STORAGE_ERROR with a message and stays whole; the connection stays open.
The renames run on a worker thread (broker.runtime.offload): the topic is gone for other requests
from their start, and its name cannot be created again until they are done (CreateTopics
answers TOPIC_ALREADY_EXISTS for that moment; Kafka's controller would already accept it).

Deviation: Kafka's controller answers before the broker renames anything (Metadata may
still list the topic for a moment); here the topic is gone from Metadata when the answer
leaves.
Committed offsets of the topic's partitions are kept (Kafka's group coordinator drops
them); a consumer of a re-created topic starts from its committed offset, clamped by the
usual out-of-range reset.
Authorization (with an authorizer), as ControllerApis.deleteTopics: DELETE on the cluster
allows every topic; else DESCRIBE, then DELETE on the topic, else TOPIC_AUTHORIZATION_FAILED
(a topic named by id keeps its name out of the answer unless the principal may DESCRIBE it).
"""

from __future__ import annotations

import logging
from collections import Counter

from broker.core.request_context import RequestContext
from broker.runtime import offload
from broker.security.acl import CLUSTER, CLUSTER_NAME, DELETE, DESCRIBE, TOPIC
from protocol.errors import ErrorCode
from protocol.messages.delete_topics import DELETE_TOPICS
from protocol.primitives import ZERO_UUID
from protocol.schema import Message
from storage.store import TopicDeletionError, TopicInfo

# ApiError(TOPIC_AUTHORIZATION_FAILED): Errors.message()
DENIED = "Topic authorization failed."
API = DELETE_TOPICS
MIN_VERSION = 1
MAX_VERSION = 6

log = logging.getLogger(__name__)


def _result(name: str | None, topic_id: bytes, code: ErrorCode, message: str | None) -> Message:
    return Message(name=name, topic_id=topic_id, error_code=code, error_message=message)


async def handle(ctx: RequestContext, request: Message) -> Message:
    # Not while CreatePartitions makes a topic's new partitions on a worker thread.
    async with ctx.state.topic_changes:
        return await _handle(ctx, request)


async def _handle(ctx: RequestContext, request: Message) -> Message:
    state = ctx.state
    store = state.store
    if ctx.version >= 6:
        wanted = [(t.name, t.topic_id) for t in request.topics]
    else:
        wanted = [(name, ZERO_UUID) for name in request.topic_names]
    names = Counter(n for n, _ in wanted if n is not None)
    ids = Counter(i for n, i in wanted if n is None and i != ZERO_UUID)
    results: list[Message] = []
    # ControllerApis.deleteTopics: DELETE on the cluster may describe and delete every
    # topic (its denial is not logged); else DESCRIBE and DELETE on each topic.
    cluster_delete = ctx.authorized(DELETE, CLUSTER, CLUSTER_NAME, log_denied=False)
    for name, topic_id in wanted:
        if name is not None and topic_id != ZERO_UUID:
            results.append(
                _result(
                    name,
                    topic_id,
                    ErrorCode.INVALID_REQUEST,
                    "You may not specify both topic name and topic id.",
                )
            )
            continue
        if name is None and topic_id == ZERO_UUID:
            results.append(
                _result(
                    None,
                    topic_id,
                    ErrorCode.INVALID_REQUEST,
                    "Neither topic name nor id were specified.",
                )
            )
            continue
        if (name is not None and names[name] > 1) or (name is None and ids[topic_id] > 1):
            what = "name" if name is not None else "id"
            results.append(
                _result(name, topic_id, ErrorCode.INVALID_REQUEST, f"Duplicate topic {what}.")
            )
            continue
        info: TopicInfo | None
        if name is not None and not cluster_delete and not ctx.authorized(DESCRIBE, TOPIC, name):
            # ControllerApis.deleteTopics: not even DESCRIBE -> no hint whether it exists.
            results.append(_result(name, topic_id, ErrorCode.TOPIC_AUTHORIZATION_FAILED, DENIED))
            continue
        if name is not None:
            info = store.topic(name)
            if info is None:
                results.append(
                    _result(
                        name,
                        topic_id,
                        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                        "This server does not host this topic-partition.",
                    )
                )
                continue
        else:
            info = store.topic_by_id(topic_id)
            if info is None:
                results.append(
                    _result(
                        None,
                        topic_id,
                        ErrorCode.UNKNOWN_TOPIC_ID,
                        "This server does not host this topic ID.",
                    )
                )
                continue
        if not cluster_delete and not ctx.authorized(DELETE, TOPIC, info.name):
            # Named by id: the name is told only to a principal that may DESCRIBE it.
            shown = name
            if name is None and ctx.authorized(DESCRIBE, TOPIC, info.name):
                shown = info.name
            results.append(_result(shown, topic_id, ErrorCode.TOPIC_AUTHORIZATION_FAILED, DENIED))
            continue
        # Gone for every request at once; the directories are renamed on a worker thread
        # (thousands of renames take a while), the name kept from re-creation meanwhile.
        store.detach_topic(info.name)
        try:
            doomed = await offload.run(store.rename_for_deletion, info)
        except (TopicDeletionError, OSError) as exc:
            store.reattach_topic(info)
            # Kafka answers a storage failure with KAFKA_STORAGE_ERROR (Errors.forException
            # of a KafkaStorageException); the topic stays as it was.
            log.error("deleting topic %r failed: %s (%s)", info.name, exc, ctx.describe())
            results.append(
                _result(name, topic_id, ErrorCode.KAFKA_STORAGE_ERROR, str(exc) or repr(exc))
            )
            continue
        store.finish_deletion(info, doomed)
        state.forget_topic(info)
        log.info(
            "deleted topic %r (%d partition(s)) (%s)",
            info.name,
            len(info.partitions),
            ctx.describe(),
        )
        results.append(_result(info.name, info.topic_id, ErrorCode.NONE, None))
    if any(r.error_code == ErrorCode.NONE for r in results):
        # Long-polling fetches on a deleted topic answer now (UNKNOWN_TOPIC_OR_PARTITION).
        state.complete_parked_fetches()
    return Message(throttle_time_ms=0, responses=results)
