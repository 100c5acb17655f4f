"""The Java client (kafka-clients 3.9.0, 4.0.0 and 4.4.0) over SASL_SSL with SCRAM-SHA-512 and PLAIN
and over SSL with a client certificate (PEM truststore and keystore, as Java reads them):
an idempotent producer's records are stored exactly once; a wrong password fails."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.compat.test_java_client import (
    JAVA_TIMEOUT_S,
    KAFKA_CLIENTS_VERSIONS,
    JavaClient,
    built,
)
from tests.support.broker_process import BrokerProcess, running
from tests.support.certs import Pki
from tests.support.produce import stored_values
from tests.support.sasl import PLAIN_JAAS, SCRAM_JAAS

COUNT = 20


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory, pki: Pki) -> Iterator[BrokerProcess]:
    overrides = {
        "listeners": "SSL://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
        **pki.keystore_settings(truststore=True),
        "listener.name.ssl.ssl.client.auth": "required",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
        "listener.name.sasl_ssl.plain.sasl.jaas.config": PLAIN_JAAS,
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": SCRAM_JAAS,
        "minikafka.scram.bootstrap.users": "SCRAM-SHA-512=[name=java,password=java-secret]",
    }
    with running(tmp_path_factory.mktemp("java-sec") / "data", overrides) as proc:
        yield proc


@pytest.fixture(params=KAFKA_CLIENTS_VERSIONS, ids=lambda v: f"kafka-clients-{v}")
def java(request: pytest.FixtureRequest) -> JavaClient:
    return built(request.param)


def jaas(mechanism: str, user: str, password: str) -> str:
    module = {
        "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
        "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
    }[mechanism]
    return f'{module} required username="{user}" password="{password}";'


def run_produce(
    java: JavaClient, bootstrap: str, topic: str, settings: dict[str, str], tmp_path: Path
) -> subprocess.CompletedProcess[str]:
    props = tmp_path / f"{topic}.properties"
    props.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
    command = java.command("Produce", bootstrap, topic, str(COUNT), "none")
    env = {**os.environ, "MINIKAFKA_CLIENT_PROPERTIES": str(props)}
    return subprocess.run(command, capture_output=True, text=True, timeout=JAVA_TIMEOUT_S, env=env)


def pem_trust(pki: Pki) -> dict[str, str]:
    return {"ssl.truststore.type": "PEM", "ssl.truststore.location": str(pki.ca)}


@pytest.mark.timeout(300)
@pytest.mark.parametrize(
    ("case", "mechanism", "user", "password"),
    [
        ("scram", "SCRAM-SHA-512", "java", "java-secret"),
        ("plain", "PLAIN", "alice", "alice-secret"),
    ],
)
def test_java_producer_over_sasl_ssl_stores_every_record_once(
    secured: BrokerProcess,
    pki: Pki,
    java: JavaClient,
    tmp_path: Path,
    case: str,
    mechanism: str,
    user: str,
    password: str,
) -> None:
    topic = f"java-{case}-{java.version}"
    settings = {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": mechanism,
        "sasl.jaas.config": jaas(mechanism, user, password),
        **pem_trust(pki),
    }
    done = run_produce(java, f"127.0.0.1:{secured.ports['SASL_SSL']}", topic, settings, tmp_path)
    assert done.returncode == 0, done.stderr
    acked = [json.loads(line) for line in done.stdout.splitlines()]
    assert [a["offset"] for a in acked if a["partition"] == 0] == list(range(len(acked)))
    assert len(stored_values(secured.data_dir, topic)) == COUNT


@pytest.mark.timeout(300)
def test_java_producer_over_ssl_with_a_client_certificate(
    secured: BrokerProcess, pki: Pki, java: JavaClient, tmp_path: Path
) -> None:
    topic = f"java-ssl-{java.version}"
    chain = pki.client_cert.read_text().strip().replace("\n", "\\n")
    key = pki.client_key.read_text().strip().replace("\n", "\\n")
    settings = {
        "security.protocol": "SSL",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.certificate.chain": chain,
        "ssl.keystore.key": key,
        **pem_trust(pki),
    }
    done = run_produce(java, f"127.0.0.1:{secured.ports['SSL']}", topic, settings, tmp_path)
    assert done.returncode == 0, done.stderr
    assert len(stored_values(secured.data_dir, topic)) == COUNT


@pytest.mark.timeout(300)
def test_java_producer_with_a_wrong_password_gets_an_authentication_error(
    secured: BrokerProcess, pki: Pki, java: JavaClient, tmp_path: Path
) -> None:
    settings = {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": jaas("SCRAM-SHA-512", "java", "wrong"),
        **pem_trust(pki),
    }
    done = run_produce(
        java,
        f"127.0.0.1:{secured.ports['SASL_SSL']}",
        f"java-denied-{java.version}",
        settings,
        tmp_path,
    )
    assert done.returncode != 0
    assert "SaslAuthenticationException" in done.stderr
    assert "invalid credentials with SASL mechanism SCRAM-SHA-512" in done.stderr
