"""ElectLeaders, versions 0-2.

Behaviour: as a one-broker Kafka 4.0 (ReplicationControlManager.electLeaders): every partition
already has its preferred (and only) leader, this broker, so each named partition answers
ELECTION_NOT_NEEDED with Kafka's default message, for both election types; an unknown topic
or partition answers UNKNOWN_TOPIC_OR_PARTITION ("No such topic as t" / "No such partition
as t-p"). topic_partitions null = every topic, each listed with no partitions (Kafka leaves
out the partitions whose election is not needed); an empty list = an empty answer
(QuorumController.electLeaders). An election type other than 0/1 (v1+) is an
InvalidRequestException: INVALID_REQUEST at the top (v1+) and for every named partition
(ElectLeadersRequest.getErrorResponse). Nothing is written.
Deviations: none known.
Authorization (with an authorizer): ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from broker.core.request_context import RequestContext
from broker.handlers._acl_requests import cluster_allowed
from broker.security.acl import ALTER
from protocol.errors import ErrorCode
from protocol.messages.elect_leaders import ELECT_LEADERS
from protocol.schema import Message

API = ELECT_LEADERS
MIN_VERSION = 0
MAX_VERSION = 2

PREFERRED, UNCLEAN = 0, 1
NOT_NEEDED_MESSAGE = "Leader election not needed for topic partition."


def _result(partition: int, code: int, message: str | None) -> Message:
    return Message(partition_id=partition, error_code=code, error_message=message)


def _elect(ctx: RequestContext, topic: str, partition: int) -> Message:
    info = ctx.state.store.topic(topic)
    if info is None:
        return _result(partition, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such topic as {topic}")
    if not 0 <= partition < len(info.partitions):
        return _result(
            partition,
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            f"No such partition as {topic}-{partition}",
        )
    # The only replica leads, so it is the preferred leader and a leader exists: neither a
    # preferred nor an unclean election is needed.
    return _result(partition, ErrorCode.ELECTION_NOT_NEEDED, NOT_NEEDED_MESSAGE)


def handle(ctx: RequestContext, request: Message) -> Message:
    wanted = request.topic_partitions
    if not cluster_allowed(ctx, ALTER):
        # KafkaApis.handleElectLeaders: every partition named gets the error.
        error = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return Message(
            throttle_time_ms=0,
            error_code=error,
            replica_election_results=[
                Message(
                    topic=t.topic,
                    partition_result=[
                        Message(partition_id=p, error_code=error, error_message=None)
                        for p in t.partitions
                    ],
                )
                for t in wanted or []
            ],
        )
    if request.election_type not in (PREFERRED, UNCLEAN):
        message = f"Unknown election type {request.election_type}"
        return Message(
            throttle_time_ms=0,
            error_code=ErrorCode.INVALID_REQUEST,
            replica_election_results=[
                Message(
                    topic=t.topic,
                    partition_result=[
                        _result(p, ErrorCode.INVALID_REQUEST, message) for p in t.partitions
                    ],
                )
                for t in wanted or []
            ],
        )
    if wanted is None:
        results = [
            Message(topic=info.name, partition_result=[])
            for info in sorted(ctx.state.store.topics(), key=lambda t: t.name)
        ]
    else:
        results = [
            Message(topic=t.topic, partition_result=[_elect(ctx, t.topic, p) for p in t.partitions])
            for t in wanted
        ]
    return Message(throttle_time_ms=0, error_code=ErrorCode.NONE, replica_election_results=results)
