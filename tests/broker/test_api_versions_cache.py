"""ApiVersions' answer is encoded once per request version and kept (broker.handlers.
api_versions): the kept bytes are what a fresh encode gives, for every version and switch,
and are made anew when what the dispatcher advertises changes."""

from __future__ import annotations

from pathlib import Path

import pytest

import minikafka
from broker.core.dispatch import Dispatcher
from broker.handlers import api_versions, build_dispatcher
from protocol import codec
from protocol.codec import Encoded
from protocol.errors import ErrorCode
from protocol.header import decode_response_header
from protocol.messages.api_versions import API_VERSIONS
from protocol.messages.share_fetch import SHARE_FETCH
from protocol.primitives import Reader
from protocol.schema import Message
from tests.support.raw_client import RawClient

VERSIONS = range(api_versions.MIN_VERSION, api_versions.MAX_VERSION + 1)
SWITCHES = [(0, 0), (1, 0), (0, 1), (1, 1)]


def fresh(dispatcher: Dispatcher, version: int, share: int, streams: int) -> bytes:
    return codec.encode_response(
        API_VERSIONS, version, api_versions.answer(dispatcher, version, share, streams)
    )


@pytest.mark.parametrize("share,streams", SWITCHES)
def test_kept_answer_is_a_fresh_encode_for_every_version(share: int, streams: int) -> None:
    dispatcher = build_dispatcher()
    for version in VERSIONS:
        kept = api_versions._encoded(dispatcher, version, share, streams)
        assert isinstance(kept, Encoded)
        assert kept == fresh(dispatcher, version, share, streams)
        # The second answer is the one kept, not encoded again.
        assert api_versions._encoded(dispatcher, version, share, streams) is kept
    # v0 has no throttle time, v3 flexible with the feature tags, v4 lists the features
    # whose minimum is 0; v1 and v2 are one shape.
    answers = {bytes(api_versions._encoded(dispatcher, v, share, streams)) for v in VERSIONS}
    assert len(answers) == len(VERSIONS) - 1


def test_kept_answer_is_made_anew_when_what_is_advertised_changes() -> None:
    dispatcher = build_dispatcher()
    before = api_versions._encoded(dispatcher, 4, 1, 0)
    dispatcher.enable("share.version")
    after = api_versions._encoded(dispatcher, 4, 1, 0)
    assert after != before and after == fresh(dispatcher, 4, 1, 0)
    keys = {m.api_key for m in codec.decode_response(API_VERSIONS, 4, after).api_keys}
    assert SHARE_FETCH.key in keys
    # Loading a lazily registered handler on its first request changes nothing.
    assert dispatcher.handler(API_VERSIONS.key) is not None
    assert api_versions._encoded(dispatcher, 4, 1, 0) is after
    # A handler registered with other versions does.
    dispatcher.register(API_VERSIONS, api_versions.handle, 0, 3)
    changed = api_versions._encoded(dispatcher, 4, 1, 0)
    assert changed == fresh(dispatcher, 4, 1, 0)
    entry = next(
        m for m in codec.decode_response(API_VERSIONS, 4, changed).api_keys if m.api_key == 18
    )
    assert (entry.min_version, entry.max_version) == (0, 3)


def test_each_dispatcher_keeps_its_own_answer() -> None:
    plain, shared = build_dispatcher(), build_dispatcher()
    shared.enable("share.version")
    assert api_versions._encoded(plain, 4, 0, 0) != api_versions._encoded(shared, 4, 0, 0)
    assert api_versions._encoded(plain, 4, 0, 0) == fresh(plain, 4, 0, 0)


def test_broker_answers_the_kept_bytes_and_checks_each_request(tmp_path: Path) -> None:
    hello = Message(client_software_name="test", client_software_version="1")
    with minikafka.ThreadedBroker(tmp_path) as broker, RawClient(broker.port) as client:
        for version in [*VERSIONS, *VERSIONS]:
            correlation_id = client.send(API_VERSIONS, version, hello)
            client.pending.clear()
            reader = Reader(client.read_frame())
            header_version = API_VERSIONS.response_header_version(version)
            assert decode_response_header(reader, header_version) == correlation_id
            assert reader.buf[reader.pos :] == fresh(build_dispatcher(), version, 0, 0)
        # A bad client software name is still refused, each time (not from the cache).
        bad = Message(client_software_name="-bad", client_software_version="1")
        for _ in range(2):
            answer = client.request(API_VERSIONS, 3, bad)
            assert answer.error_code == ErrorCode.INVALID_REQUEST and answer.api_keys == []


def test_a_fault_changes_one_answer_and_not_the_kept_one(tmp_path: Path) -> None:
    hello = Message(client_software_name="test", client_software_version="1")
    with minikafka.ThreadedBroker(tmp_path) as broker, RawClient(broker.port) as client:
        broker.faults.throttle("ApiVersions", 250, count=1)
        answer = client.request(API_VERSIONS, 3, hello)
        assert answer.throttle_time_ms == 250 and len(answer.api_keys) > 40
        again = client.request(API_VERSIONS, 3, hello)
        assert again.throttle_time_ms == 0 and again.api_keys == answer.api_keys
