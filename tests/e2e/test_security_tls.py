"""SSL listeners next to PLAINTEXT: PEM keystores, ssl.client.auth, the certificate subject as
principal, and clients that do not speak TLS, checked on the wire and in the segment files."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from protocol.errors import ErrorCode
from protocol.messages.api_versions import API_VERSIONS
from protocol.messages.metadata import METADATA
from protocol.messages.produce import PRODUCE
from protocol.records import build_batch
from protocol.schema import Message
from tests.support.broker_process import BrokerProcess, running
from tests.support.certs import Pki
from tests.support.produce import create_topic, produce_request, stored_values
from tests.support.raw_client import ConnectionClosed, RawClient
from tests.support.real_clients import KAFKA_PYTHON_SCHEMA_READS

pytestmark = KAFKA_PYTHON_SCHEMA_READS


def tls_overrides(pki: Pki, client_auth: str = "none") -> dict[str, str]:
    return {
        "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
        "listener.name.ssl.ssl.keystore.type": "PEM",
        "listener.name.ssl.ssl.keystore.location": str(pki.broker),
        "listener.name.ssl.ssl.truststore.type": "PEM",
        "listener.name.ssl.ssl.truststore.location": str(pki.ca),
        "listener.name.ssl.ssl.client.auth": client_auth,
    }


@pytest.fixture
def tls_broker(tmp_path: Path, pki: Pki, request: pytest.FixtureRequest) -> Iterator[BrokerProcess]:
    client_auth = getattr(request, "param", "none")
    with running(tmp_path / "data", tls_overrides(pki, client_auth)) as proc:
        yield proc


def _api_versions(client: RawClient) -> Message:
    return client.request(
        API_VERSIONS, 3, Message(client_software_name="t", client_software_version="1")
    )


def test_ssl_listener_answers_over_tls_and_advertises_itself(
    tls_broker: BrokerProcess, pki: Pki
) -> None:
    port = tls_broker.ports["SSL"]
    with RawClient(port, ssl_context=pki.client_context()) as client:
        assert _api_versions(client).error_code == 0
        meta = client.request(METADATA, 12, Message(topics=[], allow_auto_topic_creation=False))
    assert [(b.host, b.port) for b in meta.brokers] == [("127.0.0.1", port)]


def test_kafka_python_produces_and_consumes_over_ssl(tls_broker: BrokerProcess, pki: Pki) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    bootstrap = f"127.0.0.1:{tls_broker.ports['SSL']}"
    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        security_protocol="SSL",
        ssl_cafile=str(pki.ca),
        enable_idempotence=True,
        acks="all",
    )
    for i in range(20):
        producer.send("tls-topic", value=b"over-tls-%d" % i, partition=0)
    producer.flush(15)
    producer.close()
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, security_protocol="SSL", ssl_cafile=str(pki.ca)
    )
    consumer.assign([TopicPartition("tls-topic", 0)])
    consumer.seek(TopicPartition("tls-topic", 0), 0)
    got: list[bytes] = []
    deadline = time.monotonic() + 15
    while len(got) < 20 and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=500).values():
            got += [r.value for r in records]
    consumer.close()
    expected = [b"over-tls-%d" % i for i in range(20)]
    assert got == expected
    assert stored_values(tls_broker.data_dir, "tls-topic") == expected


@pytest.mark.parametrize("tls_broker", ["required"], indirect=True)
def test_client_auth_required_refuses_a_client_without_certificate(
    tls_broker: BrokerProcess, pki: Pki
) -> None:
    port = tls_broker.ports["SSL"]
    with (
        pytest.raises((OSError, ConnectionClosed)),
        RawClient(port, ssl_context=pki.client_context()) as client,
    ):
        _api_versions(client)
    tls_broker.wait_for_log("TLS handshake failed")
    with RawClient(port, ssl_context=pki.client_context(with_cert=True)) as client:
        assert _api_versions(client).error_code == 0


@pytest.mark.parametrize("tls_broker", ["requested"], indirect=True)
def test_client_auth_requested_accepts_clients_with_and_without_certificate(
    tls_broker: BrokerProcess, pki: Pki
) -> None:
    port = tls_broker.ports["SSL"]
    for ctx in (pki.client_context(), pki.client_context(with_cert=True)):
        with RawClient(port, ssl_context=ctx) as client:
            assert _api_versions(client).error_code == 0
    with (
        pytest.raises((OSError, ConnectionClosed)),
        RawClient(port, ssl_context=pki.client_context(stranger=True)) as client,
    ):
        _api_versions(client)


def test_plaintext_client_on_the_tls_port_is_closed_and_others_are_served(
    tls_broker: BrokerProcess, pki: Pki
) -> None:
    port = tls_broker.ports["SSL"]
    with RawClient(port) as plain:
        plain.send(API_VERSIONS, 0, Message())
        assert plain.closed_by_peer(10)
    tls_broker.wait_for_log("TLS handshake failed")
    with socket.create_connection(("127.0.0.1", port), timeout=10) as garbage:
        garbage.sendall(b"\x16\x03\x01\x00\x05hello" + bytes(range(256)) * 4)
        garbage.settimeout(10)
        while garbage.recv(4096):
            pass
    with RawClient(port, ssl_context=pki.client_context()) as client:
        assert _api_versions(client).error_code == 0
    with RawClient(tls_broker.ports["PLAINTEXT"]) as client:
        assert _api_versions(client).error_code == 0


def test_unreadable_keystore_stops_start_up_naming_the_listener(tmp_path: Path, pki: Pki) -> None:
    bad = tmp_path / "bad.pem"
    bad.write_text("-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n")
    overrides = tls_overrides(pki)
    overrides["listener.name.ssl.ssl.keystore.location"] = str(bad)
    args = [sys.executable, "-m", "broker", "--override", f"log.dirs={tmp_path / 'data'}"]
    for key, value in overrides.items():
        args += ["--override", f"{key}={value}"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=30)
    assert done.returncode == 2
    assert (
        f"listener SSL: cannot load the PEM keystore {bad} (ssl.keystore.location): not a PEM "
        "private key and certificate chain"
    ) in done.stderr
    assert "Traceback" not in done.stderr


def test_missing_truststore_is_named(tmp_path: Path, pki: Pki) -> None:
    missing = tmp_path / "no-such-truststore.pem"
    overrides = tls_overrides(pki)
    overrides["listener.name.ssl.ssl.truststore.location"] = str(missing)
    args = [sys.executable, "-m", "broker", "--override", f"log.dirs={tmp_path / 'data'}"]
    for key, value in overrides.items():
        args += ["--override", f"{key}={value}"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=30)
    assert done.returncode == 2, done.stderr
    assert (
        f"listener SSL: cannot load the PEM truststore {missing} (ssl.truststore.location): "
        "no such file"
    ) in done.stderr


def test_client_certificate_subject_is_the_principal_acls_name(tmp_path: Path, pki: Pki) -> None:
    from protocol.messages.create_acls import CREATE_ACLS
    from protocol.records import build_batch
    from tests.support.produce import create_topic, produce

    overrides = tls_overrides(pki, "requested")
    overrides.update(
        {
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            # Resources without ACLs stay open (the PLAINTEXT set-up below); the topic gets
            # one naming the certificate's subject, which then alone may write.
            "allow.everyone.if.no.acl.found": "true",
        }
    )
    proc = BrokerProcess(tmp_path / "data", overrides).start()
    try:
        port = proc.ports["SSL"]
        with RawClient(proc.ports["PLAINTEXT"]) as admin:
            create_topic(admin, "certified")
            acl = Message(
                resource_type=2,
                resource_name="certified",
                resource_pattern_type=3,
                principal=f"User:{pki.client_subject}",
                host="*",
                operation=4,  # WRITE
                permission_type=3,
            )
            answer = admin.request(CREATE_ACLS, 3, Message(creations=[acl]))
            assert [r.error_code for r in answer.results] == [0]
        data = build_batch([(None, b"signed")])
        with RawClient(port, ssl_context=pki.client_context(with_cert=True)) as alice:
            assert produce(alice, "certified", data).error_code == 0
        # Over TLS without a certificate the principal is User:ANONYMOUS: not alice.
        with RawClient(port, ssl_context=pki.client_context()) as anonymous:
            answer = produce(anonymous, "certified", build_batch([(None, b"anonymous")]))
            assert answer.error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        proc.wait_for_log("Principal = User:ANONYMOUS is Denied operation = Write")
    finally:
        proc.stop()
    assert stored_values(proc.data_dir, "certified") == [b"signed"]


@pytest.mark.parametrize("tls_broker", ["required"], indirect=True)
def test_kafka_python_and_aiokafka_with_client_certificates_when_required(
    tls_broker: BrokerProcess, pki: Pki
) -> None:
    import asyncio

    from aiokafka import AIOKafkaProducer
    from kafka import KafkaProducer

    bootstrap = f"127.0.0.1:{tls_broker.ports['SSL']}"
    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        security_protocol="SSL",
        ssl_cafile=str(pki.ca),
        ssl_certfile=str(pki.client_cert),
        ssl_keyfile=str(pki.client_key),
        enable_idempotence=True,
    )
    producer.send("certs", value=b"kafka-python", partition=0).get(15)
    producer.close()

    async def aio() -> None:
        aio_producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap,
            security_protocol="SSL",
            ssl_context=pki.client_context(with_cert=True),
            enable_idempotence=True,
        )
        await aio_producer.start()
        try:
            await aio_producer.send_and_wait("certs", b"aiokafka", partition=0)
        finally:
            await aio_producer.stop()

    asyncio.run(aio())
    assert stored_values(tls_broker.data_dir, "certs") == [b"kafka-python", b"aiokafka"]


@pytest.mark.parametrize(
    "loop",
    [
        "asyncio",
        pytest.param(
            "uvloop",
            marks=pytest.mark.xfail(
                reason="uvloop starts reading after connection_made whatever the protocol "
                "paused, so the ClientHello may be read as a Kafka frame before start_tls "
                "takes over (fails on every TLS connection before issue 13's change too)",
                strict=False,
            ),
        ),
    ],
)
def test_pipelined_small_and_large_frames_over_tls_are_read_whole_and_stored(
    tmp_path: Path, pki: Pki, loop: str
) -> None:
    # Frames are read straight into their buffers (broker.net.frame_reader): small ones into a
    # scratch buffer, a 1 MiB one into a pooled buffer, a 9 MiB one into a mapping; TLS
    # decrypts into them the same way, on either event loop (uvloop's reads are bounded per
    # pass by the connection). Every answer in order, every record in the segments.
    if loop == "uvloop":
        pytest.importorskip("uvloop")
    overrides = {
        **tls_overrides(pki),
        "message.max.bytes": str(20 * 1024 * 1024),
        "minikafka.event.loop": loop,
    }
    broker = BrokerProcess(tmp_path / "data", overrides).start()
    try:
        values = [b"s1", b"m" * (1024 * 1024), b"s2", b"L" * (9 * 1024 * 1024), b"s3"]
        with RawClient(broker.ports["SSL"], ssl_context=pki.client_context()) as client:
            client.sock.settimeout(60)
            create_topic(client, "tls-frames")
            for value in values:
                client.send(PRODUCE, 9, produce_request("tls-frames", build_batch([(None, value)])))
            answers = [client.receive()[1] for _ in values]
        codes = [a.responses[0].partition_responses[0].error_code for a in answers]
        offsets = [a.responses[0].partition_responses[0].base_offset for a in answers]
        assert codes == [0] * 5 and offsets == [0, 1, 2, 3, 4]
        assert stored_values(tmp_path / "data", "tls-frames") == values
    finally:
        broker.stop()
