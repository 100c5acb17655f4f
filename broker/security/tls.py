"""TLS for SSL and SASL_SSL listeners, through Python's ssl module.

``server_context`` builds the listener's SSLContext from its PEM settings (Kafka's
DefaultSslEngineFactory with ``ssl.keystore.type=PEM``); ``ssl.client.auth`` none /
requested / required maps to CERT_NONE / CERT_OPTIONAL / CERT_REQUIRED, as Kafka's
SSLEngine setWantClientAuth / setNeedClientAuth.

``principal_name`` is what Kafka's DefaultKafkaPrincipalBuilder names an SSL client with
the default ``ssl.principal.mapping.rules``: the certificate subject as
``X500Principal.getName()`` prints it (RFC 2253: the last RDN first, special characters
escaped, unknown attribute types as their OID with the DER value in hex); no verified
certificate -> ANONYMOUS.
"""

from __future__ import annotations

import contextlib
import os
import ssl
from collections.abc import Iterator, Mapping
from typing import Any

from broker.security.settings import TlsSettings

# RFC 2253 keywords X500Principal.getName() prints; other types as OIDs.
_KEYWORDS = {
    "commonName": "CN",
    "countryName": "C",
    "localityName": "L",
    "stateOrProvinceName": "ST",
    "organizationName": "O",
    "organizationalUnitName": "OU",
    "streetAddress": "STREET",
    "domainComponent": "DC",
    "userId": "UID",
}
# Python's names for other attribute types X500Principal prints as OID=#<DER hex>, with the
# DER string tag each is encoded with (IA5String for e-mail, PrintableString for the rest).
_OIDS = {
    "emailAddress": ("1.2.840.113549.1.9.1", 0x16),
    "serialNumber": ("2.5.4.5", 0x13),
    "title": ("2.5.4.12", 0x0C),
    "givenName": ("2.5.4.42", 0x0C),
    "surname": ("2.5.4.4", 0x0C),
}
_PROTOCOL_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
_VERIFY = {
    "none": ssl.CERT_NONE,
    "requested": ssl.CERT_OPTIONAL,
    "required": ssl.CERT_REQUIRED,
}


class TlsConfigError(Exception):
    pass


def server_context(settings: TlsSettings) -> ssl.SSLContext:
    """Raises TlsConfigError (Kafka: the broker does not start) on unreadable keys."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    versions = sorted(_PROTOCOL_VERSIONS[p] for p in settings.enabled_protocols)
    ctx.minimum_version, ctx.maximum_version = versions[0], versions[-1]
    if settings.keystore_key is not None:
        with _loading("keystore", "ssl.keystore.key and ssl.keystore.certificate.chain"):
            _load_inline_keystore(ctx, settings)
    else:
        path = settings.keystore_location
        assert path is not None
        with _loading("keystore", f"{path} (ssl.keystore.location)"):
            ctx.load_cert_chain(path, password=settings.key_password)
    if settings.truststore_location is not None:
        path = settings.truststore_location
        with _loading("truststore", f"{path} (ssl.truststore.location)"):
            ctx.load_verify_locations(cafile=path)
    if settings.truststore_certificates is not None:
        with _loading("truststore", "ssl.truststore.certificates"):
            ctx.load_verify_locations(cadata=settings.truststore_certificates)
    ctx.verify_mode = _VERIFY[settings.client_auth]
    return ctx


@contextlib.contextmanager
def _loading(store: str, source: str) -> Iterator[None]:
    """TlsConfigError naming the file (or property) that did not load, and why."""
    try:
        yield
    except FileNotFoundError:
        raise TlsConfigError(f"cannot load the PEM {store} {source}: no such file") from None
    except PermissionError:
        raise TlsConfigError(
            f"cannot load the PEM {store} {source}: not readable by uid {os.geteuid()}"
        ) from None
    except (OSError, ssl.SSLError) as exc:
        # OpenSSL's reasons ("[SSL] PEM lib") do not say which part was wrong.
        what = (
            "PEM certificates"
            if store == "truststore"
            else "a PEM private key and certificate chain (or ssl.key.password is wrong)"
        )
        raise TlsConfigError(f"cannot load the PEM {store} {source}: not {what} ({exc})") from exc


def _load_inline_keystore(ctx: ssl.SSLContext, settings: TlsSettings) -> None:
    # ssl loads keys from files only: write them to a private temporary file, then remove it.
    # (tempfile imported here: only inline PEM keystores need it.)
    import tempfile

    fd, path = tempfile.mkstemp(prefix="minikafka-keystore-", suffix=".pem")
    try:
        with os.fdopen(fd, "w") as out:
            out.write(f"{settings.keystore_key}\n{settings.keystore_certificate_chain}\n")
        ctx.load_cert_chain(path, password=settings.key_password)
    finally:
        os.unlink(path)


def principal_name(peercert: Mapping[str, Any] | None) -> str | None:
    """The client certificate's subject as Kafka names it, or None without one."""
    if not peercert or "subject" not in peercert:
        return None
    rdns = []
    for rdn in reversed(peercert["subject"]):
        rdns.append("+".join(_attribute(kind, value) for kind, value in rdn))
    return ",".join(rdns)


def _attribute(kind: str, value: str) -> str:
    keyword = _KEYWORDS.get(kind)
    if keyword is not None:
        return f"{keyword}={_escape(value)}"
    oid, tag = _OIDS.get(kind, (kind, 0x0C))
    data = value.encode()
    return f"{oid}=#{_der_length(tag, len(data))}{data.hex()}"


def _der_length(tag: int, length: int) -> str:
    if length < 0x80:
        return f"{tag:02x}{length:02x}"
    body = length.to_bytes((length.bit_length() + 7) // 8, "big")
    return f"{tag:02x}{0x80 | len(body):02x}{body.hex()}"


def _escape(value: str) -> str:
    out = []
    for i, ch in enumerate(value):
        if ch in ',+"\\<>;' or (ch == "#" and i == 0) or (ch == " " and i in (0, len(value) - 1)):
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)
