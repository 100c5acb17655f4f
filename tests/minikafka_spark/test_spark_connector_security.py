"""Spark's own Kafka connector over SASL_SSL with SCRAM-SHA-256, configured as Spark users
write it: the JAAS line in kafka.sasl.jaas.config and a PKCS12 truststore made with keytool."""

from __future__ import annotations

import shutil
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.minikafka_spark.conftest import CONNECTOR_JARS
from tests.minikafka_spark.kafka_helpers import create_topic
from tests.support.broker_process import BrokerProcess, running
from tests.support.certs import Pki
from tests.support.produce import stored_values
from tests.support.real_clients import consume_confluent
from tests.support.sasl import SCRAM_JAAS

TRUSTSTORE_PASSWORD = "truststore-secret"


@pytest.fixture(scope="module")
def truststore(pki: Pki) -> Path:
    """The test CA in a PKCS12 truststore, as a JVM deployment usually has it."""
    keytool = shutil.which("keytool")
    assert keytool is not None, "keytool comes with the Java runtime `make spark` installs"
    path = pki.ca.with_name("truststore.p12")
    subprocess.run(
        [
            keytool,
            "-importcert",
            "-noprompt",
            "-alias",
            "minikafka-ca",
            "-file",
            str(pki.ca),
            "-keystore",
            str(path),
            "-storetype",
            "PKCS12",
            "-storepass",
            TRUSTSTORE_PASSWORD,
        ],
        check=True,
        capture_output=True,
    )
    return path


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory, pki: Pki) -> Iterator[BrokerProcess]:
    overrides = {
        # PLAINTEXT first, for the test's own admin and consumer.
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
        **pki.keystore_settings(),
        "sasl.enabled.mechanisms": "SCRAM-SHA-256",
        "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config": SCRAM_JAAS,
        "minikafka.scram.bootstrap.users": "SCRAM-SHA-256=[name=spark,password=spark-secret]",
    }
    with running(tmp_path_factory.mktemp("spark-sec") / "data", overrides) as proc:
        yield proc


def secured_options(broker: BrokerProcess, truststore: Path, password: str) -> dict[str, str]:
    return {
        "kafka.bootstrap.servers": f"127.0.0.1:{broker.ports['SASL_SSL']}",
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": "SCRAM-SHA-256",
        "kafka.sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule "
        f'required username="spark" password="{password}";',
        "kafka.ssl.truststore.location": str(truststore),
        "kafka.ssl.truststore.password": TRUSTSTORE_PASSWORD,
        "kafka.ssl.truststore.type": "PKCS12",
    }


def test_batch_write_and_read_over_sasl_ssl_with_scram(
    spark: Any, secured: BrokerProcess, truststore: Path
) -> None:
    assert any(jar.name.startswith("spark-sql-kafka") for jar in CONNECTOR_JARS), "make spark"
    topic = "conn-secured"
    create_topic(secured.bootstrap, topic, 1)
    options = secured_options(secured, truststore, "spark-secret")
    rows = [(f"k-{i}", f"v-{i}") for i in range(200)]
    spark.createDataFrame(rows, "key string, value string").write.format("kafka").options(
        **options
    ).option("topic", topic).save()

    values = [f"v-{i}".encode() for i in range(200)]
    assert Counter(stored_values(secured.data_dir, topic)) == Counter(values)
    read = consume_confluent(secured.bootstrap, topic, 1, len(values), 60)
    assert Counter(g.value for g in read) == Counter(values)

    frame = spark.read.format("kafka").options(**options).option("subscribe", topic).load()
    got = [(bytes(r["key"]).decode(), bytes(r["value"]).decode()) for r in frame.collect()]
    assert Counter(got) == Counter(rows)


def test_wrong_scram_password_fails_the_job(
    spark: Any, secured: BrokerProcess, truststore: Path
) -> None:
    topic = "conn-secured-denied"
    create_topic(secured.bootstrap, topic, 1)
    options = secured_options(secured, truststore, "wrong")
    with pytest.raises(Exception, match="Authentication failed"):
        spark.read.format("kafka").options(**options).option("subscribe", topic).load().collect()
    assert stored_values(secured.data_dir, topic) == []
