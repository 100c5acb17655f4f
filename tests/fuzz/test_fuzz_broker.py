"""Fuzzing one real broker process over real sockets (``make fuzz``; ``make test`` skips it).

Hypothesis draws request frames of every API the broker describes (a valid body from
``ValueGenerator`` for a drawn seed, then mutated: bit flips, inserted and deleted bytes,
huge counts and lengths, truncation; random api key/version combinations; frames cut short;
huge declared frame lengths) and SASL exchanges (SaslHandshake v0/v1, then PLAIN, SCRAM and
OAUTHBEARER payloads, real ones mutated or random). Properties, for every input:

- the broker process stays alive;
- the connection gets an answer or is closed within ``REPLY_DEADLINE_S`` (a complete frame
  is followed by an ApiVersions probe on the same connection, so a request that is rightly
  not answered, Produce with acks=0, still shows the connection is served; a frame cut short
  is followed by our half-close, which the broker must answer by closing);
- a fresh probe connection is answered;
- the segment files of a topic written before the fuzzing are byte-for-byte unchanged.

The run is bounded by ``FUZZ_SECONDS`` (default 60, shared by the tests here). Hypothesis
keeps what it finds (failures and the inputs at the front of its targets) in
``tests/fuzz/corpus``, which is committed: each run replays it first.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import struct
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, target
from hypothesis import strategies as st
from hypothesis.database import DirectoryBasedExampleDatabase

from protocol import codec
from protocol.api_keys import ALL_APIS
from protocol.header import RequestHeader, decode_response_header, encode_request_header
from protocol.messages.alter_user_scram_credentials import ALTER_USER_SCRAM_CREDENTIALS
from protocol.messages.api_versions import API_VERSIONS
from protocol.messages.sasl_authenticate import SASL_AUTHENTICATE
from protocol.messages.sasl_handshake import SASL_HANDSHAKE
from protocol.primitives import Reader
from protocol.schema import Api, Message
from tests.support.broker_process import BrokerProcess
from tests.support.produce import batch, create_partitioned_topic, init_producer, produce
from tests.support.raw_client import SOFTWARE, RawClient
from tests.support.sasl import ScramClient, salted_password, sasl_overrides
from tests.support.values import ValueGenerator, api_versions, fields_of

pytestmark = pytest.mark.fuzz

BUDGET_S = float(os.environ.get("FUZZ_SECONDS", "60"))
PARETO_KEEP = 40


class Corpus(DirectoryBasedExampleDatabase):
    """The committed example database. Failures are always kept; of the inputs at the front
    of the reply-time target (Hypothesis's "pareto" entries) at most PARETO_KEEP per test,
    which would otherwise grow to hundreds of files a run."""

    def save(self, key: bytes, value: bytes) -> None:
        if key.endswith(b".pareto") and sum(1 for _ in self.fetch(key)) >= PARETO_KEEP:
            return
        super().save(key, value)


CORPUS = Corpus(str(Path(__file__).parent / "corpus"))
# Generous: the machine running this may be busy; the broker answers in milliseconds.
REPLY_DEADLINE_S = 10.0
# Hypothesis runs in chunks of this many inputs until the time budget is spent.
CHUNK = 10
PROBE_CORRELATION_ID = 0x7EADBEEF
REFERENCE_TOPIC = "fuzz-reference"  # 'f', 'u', 'r', 'e' are outside ValueGenerator's alphabet
SCRAM_USER, SCRAM_PASSWORD = "fuzzer", "fuzzer-secret"
APIS: list[Api] = sorted(ALL_APIS.values(), key=lambda a: a.key)
# Requests a client may rightly leave waiting (long polls, rebalances): their generated wait
# fields are capped below, but a mutation may still raise one, so silence there is allowed.
MAY_PARK = {1, 11, 14}  # Fetch, JoinGroup, SyncGroup
WAIT_FIELDS = ("max_wait_ms", "rebalance_timeout_ms", "session_timeout_ms")


# --- the broker ---------------------------------------------------------------------------


class Fuzzed:
    def __init__(self, proc: BrokerProcess, segments: dict[str, bytes]) -> None:
        self.proc = proc
        self.segments = segments
        self.inputs = 0
        self.outcomes: dict[str, int] = {}
        self.stop_at = 0.0

    def over_time(self) -> bool:
        """Past the budget: the rest of the current chunk passes at once, uncounted."""
        return time.monotonic() >= self.stop_at

    @property
    def plain_port(self) -> int:
        return self.proc.ports["PLAINTEXT"]

    @property
    def sasl_port(self) -> int:
        return self.proc.ports["SASL_PLAINTEXT"]

    def count(self, outcome: str) -> None:
        self.inputs += 1
        self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1


def segment_files(data_dir: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(data_dir)): path.read_bytes()
        for path in sorted(data_dir.glob(f"{REFERENCE_TOPIC}-*/*.log"))
    }


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fuzzed]:
    data_dir = tmp_path_factory.mktemp("fuzz") / "data"
    proc = BrokerProcess(
        data_dir,
        {
            **sasl_overrides(),
            # A lone JoinGroup completes at once instead of after the initial delay.
            "group.initial.rebalance.delay.ms": "0",
        },
    ).start()
    try:
        with RawClient(proc.ports["PLAINTEXT"]) as client:
            salt = b"fuzz-salt"
            # One request per mechanism: Kafka refuses a user altered twice in one request.
            for mechanism, name in ((1, "SCRAM-SHA-256"), (2, "SCRAM-SHA-512")):
                credential = Message(
                    name=SCRAM_USER,
                    mechanism=mechanism,
                    iterations=4096,
                    salt=salt,
                    salted_password=salted_password(name, SCRAM_PASSWORD, salt, 4096),
                )
                answer = client.request(
                    ALTER_USER_SCRAM_CREDENTIALS,
                    0,
                    Message(deletions=[], upsertions=[credential]),
                )
                assert answer.results[0].error_code == 0, answer
            create_partitioned_topic(client, REFERENCE_TOPIC, 2)
            pid = init_producer(client)
            for partition in (0, 1):
                for seq in range(0, 30, 10):
                    got = produce(
                        client,
                        REFERENCE_TOPIC,
                        batch(pid, 0, seq, count=10, tag=f"p{partition}"),
                        partition=partition,
                    )
                    assert got.error_code == 0, got
        segments = segment_files(data_dir)
        assert len(segments) == 2 and all(segments.values())
        fuzzed = Fuzzed(proc, segments)
        yield fuzzed
        print(f"\nfuzz: {fuzzed.inputs} inputs, outcomes {fuzzed.outcomes}")
    finally:
        proc.stop()


# --- talking to it ------------------------------------------------------------------------


def frame(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


def request_frame(api: Api, version: int, body: bytes, correlation_id: int, key: int) -> bytes:
    out = bytearray()
    header = RequestHeader(key, version, correlation_id, "fuzzer")
    encode_request_header(out, header, api.request_header_version(version))
    return bytes(out) + body


def probe_frame() -> bytes:
    out = bytearray()
    encode_request_header(out, RequestHeader(API_VERSIONS.key, 0, PROBE_CORRELATION_ID, "p"), 1)
    return frame(bytes(out))


def converse(port: int, data: bytes, *, half_close: bool, want: int | None) -> str:
    """Send ``data``; "answered" once a response with correlation id ``want`` arrives,
    "closed" on EOF or reset, "silent" if neither happens within the deadline."""
    deadline = time.monotonic() + REPLY_DEADLINE_S
    with socket.create_connection(("127.0.0.1", port), timeout=REPLY_DEADLINE_S) as sock:
        try:
            sock.sendall(data)
            if half_close:
                sock.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError):
            return "closed"
        buffer = b""
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return "silent"
            sock.settimeout(left)
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                return "silent"
            except (ConnectionResetError, BrokenPipeError):
                return "closed"
            if not chunk:
                return "closed"
            buffer += chunk
            while len(buffer) >= 8:
                (length,) = struct.unpack_from(">i", buffer)
                if len(buffer) < 4 + length:
                    break
                (correlation_id,) = struct.unpack_from(">i", buffer, 4)
                buffer = buffer[4 + length :]
                if correlation_id == want:
                    return "answered"


def check_broker(fuzzed: Fuzzed) -> None:
    assert fuzzed.proc.is_running(), "the broker died:\n" + fuzzed.proc.log_text()[-3000:]
    with RawClient(fuzzed.plain_port) as client:
        assert client.request(API_VERSIONS, 3, SOFTWARE).error_code == 0


def check_stored_data(fuzzed: Fuzzed) -> None:
    assert segment_files(fuzzed.proc.data_dir) == fuzzed.segments


def run_for(seconds: float, fuzzed: Fuzzed, name: str, test: Callable[[], None]) -> None:
    """Run the Hypothesis test in chunks until ``seconds`` have passed (at least one)."""
    # A fixed key: the committed corpus stays this test's when its source is edited
    # (Hypothesis would otherwise key it by a digest of the source).
    test._hypothesis_internal_database_key = name.encode()  # type: ignore[attr-defined]
    fuzzed.stop_at = time.monotonic() + seconds
    while True:
        test()
        if time.monotonic() >= fuzzed.stop_at:
            break
    check_broker(fuzzed)
    check_stored_data(fuzzed)
    # An exception no handler expected is logged with its traceback: none may appear.
    lines = list(fuzzed.proc.lines)
    internal = [i for i, line in enumerate(lines) if "Traceback" in line or " ERROR " in line]
    assert not internal, "".join(lines[internal[0] : internal[0] + 40])


FUZZ_SETTINGS = settings(
    max_examples=CHUNK,
    database=CORPUS,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    print_blob=True,
)


# --- request frames -----------------------------------------------------------------------

INTERESTING_INT32 = [0x7FFFFFFF, -0x80000000, -1, 0x00100000, 0x0FFFFFFF, 65536]
HUGE_VARINT = [b"\xff\xff\xff\xff\x0f", b"\xfe\xff\xff\xff\x0f", b"\x80\x80\x80\x80\x08"]

mutation = st.one_of(
    st.tuples(st.just("flip"), st.integers(0, 1 << 16), st.integers(1, 255)),
    st.tuples(st.just("insert"), st.integers(0, 1 << 16), st.binary(min_size=1, max_size=16)),
    st.tuples(st.just("delete"), st.integers(0, 1 << 16), st.integers(1, 16)),
    st.tuples(st.just("int32"), st.integers(0, 1 << 16), st.sampled_from(INTERESTING_INT32)),
    st.tuples(st.just("int16"), st.integers(0, 1 << 16), st.sampled_from([-1, 0x7FFF, -0x8000])),
    st.tuples(st.just("varint"), st.integers(0, 1 << 16), st.sampled_from(HUGE_VARINT)),
    st.tuples(st.just("truncate"), st.integers(0, 1 << 16), st.just(0)),
)


def mutate(body: bytes, mutations: list[tuple[str, int, Any]]) -> bytes:
    data = bytearray(body)
    for kind, where, arg in mutations:
        pos = where % (len(data) + 1)
        if kind == "flip" and data:
            data[pos % len(data)] ^= arg
        elif kind == "insert":
            data[pos:pos] = arg
        elif kind == "delete":
            del data[pos : pos + arg]
        elif kind == "int32":
            data[pos : pos + 4] = struct.pack(">i", arg)
        elif kind == "int16":
            data[pos : pos + 2] = struct.pack(">h", arg)
        elif kind == "varint":
            data[pos : pos + len(arg)] = arg
        elif kind == "truncate":
            del data[pos:]
    return bytes(data)


def valid_body(api: Api, version: int, seed: int) -> bytes:
    fields = fields_of(api, "request")
    flexible = api.is_flexible(version)
    message = ValueGenerator(seed).message(fields, version, flexible)
    for name in WAIT_FIELDS:
        value = getattr(message, name, None)
        if isinstance(value, int) and value > 200:
            setattr(message, name, 100)
    return codec.encode_request(api, version, message)


@st.composite
def request_frames(draw: st.DrawFn) -> tuple[str, int, str, bytes, bool]:
    """(listener, api key, shape, bytes on the wire, whether silence is acceptable)."""
    api = draw(st.sampled_from(APIS))
    served = list(api_versions(api))
    version = draw(
        st.one_of(
            st.sampled_from(served),
            st.sampled_from(served),
            st.sampled_from(served),
            st.sampled_from(served),
            st.sampled_from(served),
            st.integers(-1, served[-1] + 3),
            st.integers(-(2**15), 2**15 - 1),
        )
    )
    key = draw(
        st.one_of(
            st.just(api.key),
            st.just(api.key),
            st.just(api.key),
            st.just(api.key),
            st.just(api.key),
            st.sampled_from([-1, 2**15 - 1, max(ALL_APIS) + 1]),
            st.integers(-(2**15), 2**15 - 1),
        )
    )
    if version in served:
        body = valid_body(api, version, draw(st.integers(0, 2**32)))
    else:
        body = draw(st.binary(max_size=64))
    # Half the frames unmutated: valid requests reach the handlers, mutated ones the decoder.
    body = mutate(body, draw(st.just([]) | st.lists(mutation, min_size=1, max_size=4)))
    payload = request_frame(api, version, body, draw(st.integers(0, 2**31 - 1)), key)
    listener = draw(st.sampled_from(["PLAINTEXT"] * 3 + ["SASL_PLAINTEXT"]))
    shape = draw(st.sampled_from(["complete", "complete", "complete", "short", "huge-length"]))
    if shape == "complete":
        wire = frame(payload) + probe_frame()
    elif shape == "short":
        cut = draw(st.integers(0, max(0, len(payload) - 1)))
        wire = struct.pack(">i", len(payload)) + payload[:cut]
    else:
        declared = draw(st.sampled_from([2**31 - 1, 2**30, 100 * 2**20 + 1, 0, -1, -(2**31)]))
        wire = struct.pack(">i", declared) + payload[: draw(st.integers(0, 64))]
    return listener, key, shape, wire, key in MAY_PARK


def test_fuzz_request_frames(fuzzed: Fuzzed) -> None:
    @FUZZ_SETTINGS
    @given(request_frames())
    def one(case: tuple[str, int, str, bytes, bool]) -> None:
        listener, _key, shape, wire, may_park = case
        if fuzzed.over_time():
            return
        port = fuzzed.plain_port if listener == "PLAINTEXT" else fuzzed.sasl_port
        started = time.monotonic()
        if shape == "complete":
            outcome = converse(port, wire, half_close=False, want=PROBE_CORRELATION_ID)
        else:
            outcome = converse(port, wire, half_close=True, want=None)
        target((time.monotonic() - started) * 1000, label="reply ms")
        fuzzed.count(f"{shape}:{outcome}")
        if not (outcome == "silent" and may_park):
            assert outcome != "silent", f"no answer and no close within {REPLY_DEADLINE_S}s"
        check_broker(fuzzed)

    run_for(BUDGET_S * 0.6, fuzzed, "request-frames", one)


# --- SASL exchanges -----------------------------------------------------------------------

MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"]


def b64(value: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()


claims = st.fixed_dictionaries(
    {"sub": st.text(max_size=12)},
    optional={
        "exp": st.one_of(st.integers(-(2**63), 2**63), st.floats(), st.text(max_size=4)),
        "iat": st.one_of(st.integers(-(2**40), 2**40), st.none()),
        "scope": st.one_of(st.text(max_size=12), st.lists(st.text(max_size=5), max_size=3)),
    },
)


@st.composite
def sasl_payload(draw: st.DrawFn, mechanism: str) -> tuple[str, bytes]:
    """("scram-final", first message) when the second SCRAM round is computed from the
    server's answer; ("raw", token) otherwise."""
    kind = draw(st.sampled_from(["real", "real", "random"]))
    if kind == "random":
        return "raw", draw(st.binary(max_size=200))
    if mechanism == "PLAIN":
        user = draw(st.sampled_from(["admin", "alice", ""]) | st.text(max_size=8))
        password = draw(st.sampled_from(["admin-secret", "wrong"]) | st.text(max_size=8))
        authzid = draw(st.sampled_from(["", "admin"]) | st.text(max_size=4))
        token = f"{authzid}\0{user}\0{password}".encode()
    elif mechanism.startswith("SCRAM"):
        user = draw(st.sampled_from([SCRAM_USER, "nobody"]) | st.text(max_size=8))
        nonce = draw(st.text(min_size=0, max_size=24))
        extra = draw(st.sampled_from(["", ",e=x", ",m=ext", ",r=again"]))
        gs2 = draw(st.sampled_from(["n,,", "y,,", "p=x,,", "n,a=u,", ""]))
        token = f"{gs2}n={user},r={nonce}{extra}".encode()
        if draw(st.booleans()):
            return "scram-final", token
    else:
        header = draw(st.sampled_from([{"alg": "none"}, {"alg": "HS256"}, {}]))
        jwt = f"{b64(header)}.{b64(draw(claims))}.{draw(st.sampled_from(['', 'sig']))}"
        token = f"n,,\x01auth=Bearer {jwt}\x01\x01".encode()
    return "raw", mutate(token, draw(st.lists(mutation, max_size=2)))


@st.composite
def sasl_exchanges(draw: st.DrawFn) -> dict[str, Any]:
    mechanism = draw(st.sampled_from(MECHANISMS) | st.text(max_size=20))
    steps = draw(
        st.lists(
            sasl_payload(mechanism if mechanism in MECHANISMS else "PLAIN"), min_size=1, max_size=3
        )
    )
    return {
        "mechanism": mechanism,
        "handshake_version": draw(st.sampled_from([0, 1, 1])),
        "authenticate_version": draw(st.sampled_from([0, 1, 2, 2])),
        "steps": steps,
        "final_mutations": draw(st.lists(mutation, max_size=2)),
        "listener": draw(st.sampled_from(["SASL_PLAINTEXT", "SASL_PLAINTEXT", "PLAINTEXT"])),
    }


class Silent(Exception):
    pass


class Closed(Exception):
    pass


class Conversation:
    """One connection, request by request, each answered or closed within the deadline."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=REPLY_DEADLINE_S)
        self.correlation_id = 0

    def close(self) -> None:
        self.sock.close()

    def send(self, data: bytes) -> None:
        try:
            self.sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            raise Closed from None

    def read_frame(self) -> bytes:
        head = self._exact(4)
        return self._exact(struct.unpack(">i", head)[0])

    def _exact(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            try:
                chunk = self.sock.recv(n - len(data))
            except TimeoutError:
                raise Silent from None
            except (ConnectionResetError, BrokenPipeError):
                raise Closed from None
            if not chunk:
                raise Closed
            data += chunk
        return data

    def request(self, api: Api, version: int, body: Message) -> Message:
        self.correlation_id += 1
        payload = request_frame(
            api, version, codec.encode_request(api, version, body), self.correlation_id, api.key
        )
        self.send(frame(payload))
        reader = Reader(self.read_frame())
        decode_response_header(reader, api.response_header_version(version))
        return codec.decode(api.response, version, api.is_flexible(version), reader)


def sasl_exchange(port: int, case: dict[str, Any]) -> str:
    """Run one exchange; "closed", "answered" (every step), raises Silent on a stall."""
    conv = Conversation(port)
    try:
        answer = conv.request(
            SASL_HANDSHAKE, case["handshake_version"], Message(mechanism=case["mechanism"])
        )
        if answer.error_code != 0:
            # Kafka closes after a failed handshake; the probe tells whether it still serves.
            conv.send(probe_frame())
            conv.read_frame()
            return "answered"
        raw = case["handshake_version"] == 0
        for kind, token in case["steps"]:
            scram = None
            if kind == "scram-final":
                scram = ScramClient(case["mechanism"], SCRAM_USER, SCRAM_PASSWORD)
                token = scram.first()
            reply = _auth_step(conv, raw, case["authenticate_version"], token)
            if scram is not None and reply is not None:
                try:
                    final = scram.final(reply)
                except (AssertionError, ValueError, KeyError, UnicodeDecodeError):
                    final = reply
                _auth_step(
                    conv, raw, case["authenticate_version"], mutate(final, case["final_mutations"])
                )
        conv.send(probe_frame())
        conv.read_frame()
        return "answered"
    except Closed:
        return "closed"
    finally:
        conv.close()


def _auth_step(conv: Conversation, raw: bool, version: int, token: bytes) -> bytes | None:
    if raw:
        conv.send(frame(token))
        return conv.read_frame()
    answer = conv.request(SASL_AUTHENTICATE, version, Message(auth_bytes=token))
    return bytes(answer.auth_bytes) if answer.error_code == 0 else None


def test_fuzz_sasl_exchanges(fuzzed: Fuzzed) -> None:
    @FUZZ_SETTINGS
    @given(sasl_exchanges())
    def one(case: dict[str, Any]) -> None:
        if fuzzed.over_time():
            return
        port = fuzzed.sasl_port if case["listener"] == "SASL_PLAINTEXT" else fuzzed.plain_port
        started = time.monotonic()
        try:
            outcome = sasl_exchange(port, case)
        except Silent:
            outcome = "silent"
        target((time.monotonic() - started) * 1000, label="exchange ms")
        fuzzed.count(f"sasl:{outcome}")
        assert outcome != "silent", f"no answer and no close within {REPLY_DEADLINE_S}s"
        check_broker(fuzzed)

    run_for(BUDGET_S * 0.4, fuzzed, "sasl-exchanges", one)
