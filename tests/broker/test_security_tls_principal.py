"""The SSL principal: a client certificate's subject as Kafka's X500Principal.getName()."""

from __future__ import annotations

import ssl
from pathlib import Path

from broker.security.tls import principal_name
from tests.support.certs import make_pki


def test_certificate_subject_is_named_as_rfc2253_last_rdn_first(tmp_path: Path) -> None:
    pki = make_pki(tmp_path)
    # The same dict SSLSocket.getpeercert() gives for a verified peer.
    cert = ssl._ssl._test_decode_cert(str(pki.client_cert))  # type: ignore[attr-defined]
    assert principal_name(cert) == pki.client_subject == "CN=alice,O=Acme\\, Inc.,C=NO"


def test_special_characters_and_unknown_types_are_written_as_x500principal_does() -> None:
    subject = (
        (("commonName", " #lead+trail "),),
        (("emailAddress", "a@b.c"), ("organizationalUnitName", 'x"y')),
    )
    assert principal_name({"subject": subject}) == (
        '1.2.840.113549.1.9.1=#16056140622e63+OU=x\\"y,CN=\\ #lead\\+trail\\ '
    )

    assert principal_name({"subject": ((("commonName", "#x;y"),),)}) == "CN=\\#x\\;y"


def test_no_verified_certificate_means_no_name() -> None:
    assert principal_name(None) is None
    assert principal_name({}) is None
