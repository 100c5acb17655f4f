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
In a simulated cluster (broker.cluster.state.Cluster.elect, as ReplicationControlManager
.electLeader): PREFERRED makes the first replica the leader when it is alive and in the ISR
(ELECTION_NOT_NEEDED when it leads, PREFERRED_LEADER_NOT_AVAILABLE otherwise); UNCLEAN elects
the first live replica of a partition with no leader (ELECTION_NOT_NEEDED when it has one,
ELIGIBLE_LEADERS_NOT_AVAILABLE when no replica runs), whatever unclean.leader.election.enable
says; an elected partition answers NONE with a null message. Any node answers (Kafka forwards
the request to the controller).
Deviations: none known.
Authorization (with an authorizer): ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from broker.cluster.state import leadership_key
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
# Kafka's Errors' default messages, which ApiError.message() answers.
_MESSAGES = {
    ErrorCode.ELECTION_NOT_NEEDED: NOT_NEEDED_MESSAGE,
    ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE: "The preferred leader was not available.",
    ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE: "Eligible topic partition leaders are not available.",
}


def _result(partition: int, code: int, message: str | None) -> Message:
    return Message(partition_id=partition, error_code=code, error_message=message)


def _elect(ctx: RequestContext, topic: str, partition: int, election_type: int) -> Message:
    info = ctx.state.store.topic(topic)
    if info is None:
        return _result(partition, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such topic as {topic}")
    if not 0 <= partition < len(info.partitions):
        return _result(
            partition,
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            f"No such partition as {topic}-{partition}",
        )
    cluster = ctx.state.cluster
    if cluster is None:
        # The only replica leads, so it is the preferred leader and a leader exists: neither
        # a preferred nor an unclean election is needed.
        return _result(partition, ErrorCode.ELECTION_NOT_NEEDED, NOT_NEEDED_MESSAGE)
    key = leadership_key(info.name, info.topic_id)
    error = cluster.elect(key, partition, unclean=election_type == UNCLEAN)
    return _result(partition, error, _MESSAGES.get(error))


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
    kind = request.election_type
    if wanted is None:
        # Every partition; those whose election is not needed are left out.
        results = []
        for info in sorted(ctx.state.store.topics(), key=lambda t: t.name):
            elected = [_elect(ctx, info.name, p, kind) for p in range(len(info.partitions))]
            results.append(
                Message(
                    topic=info.name,
                    partition_result=[
                        r for r in elected if r.error_code != ErrorCode.ELECTION_NOT_NEEDED
                    ],
                )
            )
    else:
        results = [
            Message(
                topic=t.topic,
                partition_result=[_elect(ctx, t.topic, p, kind) for p in t.partitions],
            )
            for t in wanted
        ]
    if ctx.state.replication is not None:
        # New leaders: high watermarks, waiting appends and parked fetches see them now.
        ctx.state.replication.refresh()
        ctx.state.complete_parked_fetches()
    return Message(throttle_time_ms=0, error_code=ErrorCode.NONE, replica_election_results=results)
