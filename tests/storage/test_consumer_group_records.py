"""The consumer group record keeps a classic-protocol member's metadata (version 1) and the
resolved subscription regexes (version 2), and still reads version 0 and 1 bodies."""

from __future__ import annotations

import struct

from storage import consumer_group_records as cgr


def member(**extra: object) -> cgr.ConsumerMemberRecord:
    values: dict[str, object] = dict(
        member_id="m",
        instance_id=None,
        rack_id=None,
        client_id="c",
        client_host="/h",
        rebalance_timeout_ms=300,
        subscribed_topic_names=("t",),
        subscribed_topic_regex=None,
        server_assignor=None,
        member_epoch=4,
        previous_member_epoch=3,
        state=0,
        assigned=((b"\x01" * 16, (0, 1)),),
        pending_revocation=(),
        target=((b"\x01" * 16, (0, 1)),),
    )
    values.update(extra)
    return cgr.ConsumerMemberRecord(**values)  # type: ignore[arg-type]


def test_classic_member_metadata_round_trips() -> None:
    record = cgr.ConsumerGroupRecord(
        4,
        4,
        (
            member(classic_session_timeout_ms=45_000, classic_protocols=(("range", b"\x00\x01"),)),
            member(member_id="n"),
        ),
    )
    assert cgr.decode(cgr.encode(record), 0) == record


def test_version_0_body_is_read_as_consumer_protocol_members() -> None:
    body = bytearray(cgr.encode(cgr.ConsumerGroupRecord(4, 4, (member(),))))
    # Version 0: no classic metadata after the target, no resolved regexes after the members.
    v0 = struct.pack(">h", 0) + bytes(body[2:-12])
    decoded = cgr.decode(v0, 0)
    assert decoded.members[0].classic_session_timeout_ms is None
    assert decoded == cgr.ConsumerGroupRecord(4, 4, (member(),))


def test_resolved_regexes_round_trip_and_version_1_has_none() -> None:
    record = cgr.ConsumerGroupRecord(
        5,
        5,
        (member(subscribed_topic_names=(), subscribed_topic_regex="orders\\..*"),),
        (("orders\\..*", ("orders.v1", "orders.v2")), ("none", ())),
    )
    body = cgr.encode(record)
    assert cgr.decode(body, 0) == record
    # Version 1: the same body without the regexes' count and entries.
    without = cgr.encode(cgr.ConsumerGroupRecord(5, 5, record.members))
    v1 = struct.pack(">h", 1) + without[2:-4]
    assert cgr.decode(v1, 0) == cgr.ConsumerGroupRecord(5, 5, record.members)
