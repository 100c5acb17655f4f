"""Pipelined requests on one connection are answered strictly in request order."""

from __future__ import annotations

from protocol.messages.api_versions import API_VERSIONS
from protocol.messages.metadata import METADATA
from protocol.messages.produce import PRODUCE
from protocol.schema import Message
from tests.support.broker_process import BrokerProcess
from tests.support.produce import (
    batch,
    produce_request,
    producing_to,
    stored,
)
from tests.support.raw_client import SOFTWARE


def test_five_pipelined_requests_with_acks0_between_answered_in_order(
    broker: BrokerProcess,
) -> None:
    with producing_to(broker.port, "order") as (client, pid):
        sent = []
        for i in range(5):
            sent.append(client.send(PRODUCE, 9, produce_request("order", batch(pid, 0, i * 4))))
            # acks=0 in between: no response, and it must not stall the ones after it.
            client.send(
                PRODUCE,
                9,
                produce_request("order", batch(pid, 0, i * 4 + 2), acks=0),
                expect_response=False,
            )
        sent.append(client.send(METADATA, 12, Message(topics=None)))
        sent.append(client.send(API_VERSIONS, 3, SOFTWARE))
        got = [client.receive()[0] for _ in sent]
        assert got == sent
    # Everything was stored, in send order, with contiguous offsets.
    headers = [h for h, _ in stored(broker.data_dir, "order")]
    assert [h.base_sequence for h in headers] == list(range(0, 20, 2))
    assert [h.base_offset for h in headers] == list(range(0, 20, 2))
