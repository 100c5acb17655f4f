"""kcat (librdkafka 2.0.2) over SSL with a client certificate, SASL_PLAINTEXT and SASL_SSL
with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512: idempotent produce, consume back, and a wrong
password refused; checked on the segment files. (No capture proxy: it cannot read TLS.)"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest

from tests.compat.conftest import require_tool
from tests.support.broker_process import BrokerProcess, running
from tests.support.certs import Pki
from tests.support.produce import stored_values
from tests.support.sasl import PLAIN_JAAS, SCRAM_JAAS

SCRAM_USERS = (
    "SCRAM-SHA-256=[name=kc,password=kc-secret];SCRAM-SHA-512=[name=kc,password=kc-secret]"
)


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory, pki: Pki) -> Iterator[BrokerProcess]:
    overrides = {
        "listeners": "SSL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
        **pki.keystore_settings(truststore=True),
        "listener.name.ssl.ssl.client.auth": "required",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "minikafka.scram.bootstrap.users": SCRAM_USERS,
    }
    for listener in ("sasl_plaintext", "sasl_ssl"):
        overrides[f"listener.name.{listener}.plain.sasl.jaas.config"] = PLAIN_JAAS
        for mech in ("scram-sha-256", "scram-sha-512"):
            overrides[f"listener.name.{listener}.{mech}.sasl.jaas.config"] = SCRAM_JAAS
    with running(tmp_path_factory.mktemp("kcat-sec") / "data", overrides) as proc:
        yield proc


def kcat(args: list[str], stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    tool = require_tool("kcat", "kafkacat")
    return subprocess.run([tool, *args], input=stdin, capture_output=True, timeout=60)


CASES = {
    "ssl-client-cert": ("SSL", {"security.protocol": "SSL"}),
    "sasl-plaintext-plain": (
        "SASL_PLAINTEXT",
        {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": "alice",
            "sasl.password": "alice-secret",
        },
    ),
    "sasl-ssl-scram-256": (
        "SASL_SSL",
        {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.username": "kc",
            "sasl.password": "kc-secret",
        },
    ),
    "sasl-ssl-scram-512": (
        "SASL_SSL",
        {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": "kc",
            "sasl.password": "kc-secret",
        },
    ),
}


def settings(pki: Pki, listener: str, extra: dict[str, str]) -> list[str]:
    values = dict(extra)
    if listener in ("SSL", "SASL_SSL"):
        values["ssl.ca.location"] = str(pki.ca)
    if listener == "SSL":
        values["ssl.certificate.location"] = str(pki.client_cert)
        values["ssl.key.location"] = str(pki.client_key)
    return [arg for k, v in values.items() for arg in ("-X", f"{k}={v}")]


@pytest.mark.parametrize("case", list(CASES))
def test_kcat_produces_idempotently_and_consumes_over_each_security_protocol(
    secured: BrokerProcess, pki: Pki, case: str
) -> None:
    listener, extra = CASES[case]
    bootstrap = f"127.0.0.1:{secured.ports[listener]}"
    topic = f"kcat-{case}"
    lines = [b"%s line %d" % (case.encode(), i) for i in range(50)]
    auth = settings(pki, listener, extra)
    done = kcat(
        ["-P", "-b", bootstrap, "-t", topic, "-p", "0", "-X", "enable.idempotence=true", *auth],
        b"\n".join(lines) + b"\n",
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert stored_values(secured.data_dir, topic) == lines
    done = kcat(["-C", "-b", bootstrap, "-t", topic, "-o", "beginning", "-e", *auth])
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert done.stdout.splitlines() == lines


def test_kcat_with_a_wrong_password_fails_with_an_authentication_error(
    secured: BrokerProcess, pki: Pki
) -> None:
    listener, extra = CASES["sasl-ssl-scram-256"]
    auth = settings(pki, listener, {**extra, "sasl.password": "wrong"})
    bootstrap = f"127.0.0.1:{secured.ports[listener]}"
    done = kcat(["-L", "-b", bootstrap, "-m", "10", *auth])
    assert done.returncode != 0
    assert b"Authentication failed" in done.stderr or b"authentication" in done.stderr.lower()
