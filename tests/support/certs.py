"""Certificates made in the test (never committed keys): a CA, a broker and client certs.

Written as PEM files, the way Kafka's ``ssl.keystore.type=PEM`` expects them: the keystore
file holds the private key and the certificate chain, the truststore file the CA.
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


@dataclass(frozen=True)
class Pki:
    ca: Path  # the CA certificate (a PEM truststore)
    broker: Path  # broker key + certificate (a PEM keystore)
    broker_cert: Path
    broker_key: Path
    client_cert: Path
    client_key: Path
    client_subject: str  # RFC 2253, as Kafka's X500Principal.getName() prints it
    stranger_cert: Path  # a client certificate signed by a CA the broker does not trust
    stranger_key: Path

    def client_context(self, *, with_cert: bool = False, stranger: bool = False) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(self.ca))
        if with_cert:
            ctx.load_cert_chain(str(self.client_cert), str(self.client_key))
        if stranger:
            ctx.load_cert_chain(str(self.stranger_cert), str(self.stranger_key))
        return ctx

    def keystore_settings(self, *, truststore: bool = False) -> dict[str, str]:
        """Broker-wide settings for every TLS listener: the broker's PEM keystore and, with
        ``truststore``, the CA as PEM truststore (to check client certificates)."""
        settings = {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(self.broker)}
        if truststore:
            settings |= {"ssl.truststore.type": "PEM", "ssl.truststore.location": str(self.ca)}
        return settings


def _name(**attrs: str) -> x509.Name:
    oids = {
        "CN": NameOID.COMMON_NAME,
        "O": NameOID.ORGANIZATION_NAME,
        "OU": NameOID.ORGANIZATIONAL_UNIT_NAME,
        "C": NameOID.COUNTRY_NAME,
    }
    return x509.Name([x509.NameAttribute(oids[k], v) for k, v in attrs.items()])


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _cert(
    subject: x509.Name,
    key: ec.EllipticCurvePrivateKey,
    issuer: x509.Name,
    issuer_key: ec.EllipticCurvePrivateKey,
    *,
    ca: bool = False,
    server: bool = False,
) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if server:
        builder = builder.add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
    return builder.sign(issuer_key, hashes.SHA256())


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _pem_cert(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def make_pki(directory: Path) -> Pki:
    directory.mkdir(parents=True, exist_ok=True)
    ca_key, other_ca_key = _key(), _key()
    ca_name, other_ca_name = _name(CN="minikafka test CA"), _name(CN="someone else's CA")
    ca = _cert(ca_name, ca_key, ca_name, ca_key, ca=True)
    broker_key = _key()
    broker = _cert(_name(CN="localhost"), broker_key, ca_name, ca_key, server=True)
    client_key = _key()
    client = _cert(_name(C="NO", O="Acme, Inc.", CN="alice"), client_key, ca_name, ca_key)
    stranger_key = _key()
    stranger = _cert(_name(CN="mallory"), stranger_key, other_ca_name, other_ca_key)

    paths = {
        "ca.pem": _pem_cert(ca),
        "broker.keystore.pem": _pem_key(broker_key) + _pem_cert(broker) + _pem_cert(ca),
        "broker.crt": _pem_cert(broker) + _pem_cert(ca),
        "broker.key": _pem_key(broker_key),
        "client.crt": _pem_cert(client),
        "client.key": _pem_key(client_key),
        "stranger.crt": _pem_cert(stranger),
        "stranger.key": _pem_key(stranger_key),
    }
    for name, data in paths.items():
        (directory / name).write_bytes(data)
    return Pki(
        ca=directory / "ca.pem",
        broker=directory / "broker.keystore.pem",
        broker_cert=directory / "broker.crt",
        broker_key=directory / "broker.key",
        client_cert=directory / "client.crt",
        client_key=directory / "client.key",
        # X500Principal.getName(): the last RDN first, a comma inside a value escaped.
        client_subject="CN=alice,O=Acme\\, Inc.,C=NO",
        stranger_cert=directory / "stranger.crt",
        stranger_key=directory / "stranger.key",
    )
