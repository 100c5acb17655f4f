"""Security settings per listener and for the authorizer, read with Kafka's property names.

Kafka resolves a listener's security configs with the ``listener.name.<listener>.`` prefix
first, then the unprefixed name (KafkaConfig / AbstractConfig.valuesWithPrefixOverride);
per-mechanism SASL configs take ``listener.name.<listener>.<mechanism>.`` (lower case),
and ``sasl.jaas.config`` is read ONLY in that form on a broker (JaasContext.loadServerContext
warns about and ignores the unprefixed one).

Deviations from Kafka:
- Keystores and truststores are PEM only (``ssl.keystore.type=PEM``, files or the inline
  ``ssl.keystore.key``/``ssl.keystore.certificate.chain``/``ssl.truststore.certificates``):
  JKS and PKCS12 need Java's key tools; they stop start-up with a message saying so.
- ``ssl.cipher.suites`` (Java names) is not applied; Python's ssl defaults are used.
- Mechanisms: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER (unsecured tokens, as
  Kafka's default handler); GSSAPI (Kerberos) is not served and stops start-up.
- Java plug-ins and rules that decide who a client is (``principal.builder.class``,
  ``sasl.server.callback.handler.class``, ``ssl.principal.mapping.rules`` other than
  DEFAULT) stop start-up: minikafka cannot apply them, and ignoring them would name
  principals differently from Kafka.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from broker.security.jaas import JaasEntry, JaasError, parse

PLAIN = "PLAIN"
SCRAM_SHA_256 = "SCRAM-SHA-256"
SCRAM_SHA_512 = "SCRAM-SHA-512"
OAUTHBEARER = "OAUTHBEARER"
MECHANISMS = (PLAIN, SCRAM_SHA_256, SCRAM_SHA_512, OAUTHBEARER)

# Kafka's login modules per mechanism (what the JAAS entry of each must name).
LOGIN_MODULES = {
    PLAIN: "org.apache.kafka.common.security.plain.PlainLoginModule",
    SCRAM_SHA_256: "org.apache.kafka.common.security.scram.ScramLoginModule",
    SCRAM_SHA_512: "org.apache.kafka.common.security.scram.ScramLoginModule",
    OAUTHBEARER: "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule",
}

STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
CLIENT_AUTH = ("none", "requested", "required")
TLS_PROTOCOLS = ("TLSv1.2", "TLSv1.3")


class SettingError(ValueError):
    def __init__(self, prop: str, message: str) -> None:
        super().__init__(f"{prop}: {message}")
        self.prop = prop
        self.message = message


@dataclass(frozen=True)
class TlsSettings:
    keystore_location: str | None = None
    keystore_key: str | None = None
    keystore_certificate_chain: str | None = None
    key_password: str | None = None
    truststore_location: str | None = None
    truststore_certificates: str | None = None
    client_auth: str = "none"
    enabled_protocols: tuple[str, ...] = TLS_PROTOCOLS


@dataclass(frozen=True)
class SaslSettings:
    mechanisms: tuple[str, ...]
    jaas: Mapping[str, JaasEntry] = field(default_factory=dict)
    # connections.max.reauth.ms per mechanism (KIP-368); 0 = no re-authentication.
    reauth_ms: Mapping[str, int] = field(default_factory=dict)
    max_receive_size: int = 524288

    def plain_users(self) -> dict[str, str]:
        """PlainServerCallbackHandler's users: every ``user_<name>="<password>"`` option."""
        entry = self.jaas.get(PLAIN)
        if entry is None:
            return {}
        return {k[len("user_") :]: v for k, v in entry.options if k.startswith("user_")}


@dataclass(frozen=True)
class ListenerSecurity:
    protocol: str = "PLAINTEXT"
    tls: TlsSettings | None = None
    sasl: SaslSettings | None = None


PLAINTEXT = ListenerSecurity()


@dataclass(frozen=True)
class AuthorizerSettings:
    enabled: bool = False
    super_users: tuple[str, ...] = ()
    allow_everyone_if_no_acl_found: bool = False


def _lookup(raw: Mapping[str, str], listener: str, name: str) -> tuple[str, str] | None:
    """(property as set, value) with the listener prefix winning, as Kafka."""
    for prop in (f"listener.name.{listener.lower()}.{name}", name):
        if prop in raw:
            return prop, raw[prop].strip()
    return None


def _get(raw: Mapping[str, str], listener: str, name: str) -> str | None:
    found = _lookup(raw, listener, name)
    return None if found is None or found[1] == "" else found[1]


def _tls(raw: Mapping[str, str], listener: str) -> TlsSettings:
    for store in ("keystore", "truststore"):
        prop = f"ssl.{store}.type"
        found = _lookup(raw, listener, prop)
        kind = found[1] if found else "JKS"
        location = _get(raw, listener, f"ssl.{store}.location")
        inline = _get(
            raw,
            listener,
            "ssl.keystore.key" if store == "keystore" else "ssl.truststore.certificates",
        )
        if (location or inline or store == "keystore") and kind.upper() != "PEM":
            raise SettingError(
                found[0] if found else f"listener.name.{listener.lower()}.{prop}",
                f"{kind}: minikafka reads PEM {store}s only (set {prop}=PEM)",
            )
    settings = TlsSettings(
        keystore_location=_get(raw, listener, "ssl.keystore.location"),
        keystore_key=_get(raw, listener, "ssl.keystore.key"),
        keystore_certificate_chain=_get(raw, listener, "ssl.keystore.certificate.chain"),
        key_password=_get(raw, listener, "ssl.key.password"),
        truststore_location=_get(raw, listener, "ssl.truststore.location"),
        truststore_certificates=_get(raw, listener, "ssl.truststore.certificates"),
        client_auth=(_get(raw, listener, "ssl.client.auth") or "none").lower(),
        enabled_protocols=tuple(
            p.strip()
            for p in (
                _get(raw, listener, "ssl.enabled.protocols") or ",".join(TLS_PROTOCOLS)
            ).split(",")
            if p.strip()
        ),
    )
    if settings.client_auth not in CLIENT_AUTH:
        raise SettingError(
            "ssl.client.auth", f"{settings.client_auth!r} is not one of {CLIENT_AUTH}"
        )
    if settings.keystore_location is None and settings.keystore_key is None:
        raise SettingError(
            "ssl.keystore.location",
            f"listener {listener} needs a key and certificate (ssl.keystore.location, or "
            "ssl.keystore.key with ssl.keystore.certificate.chain)",
        )
    if settings.keystore_key is not None and settings.keystore_certificate_chain is None:
        raise SettingError("ssl.keystore.certificate.chain", "required with ssl.keystore.key")
    unknown = [p for p in settings.enabled_protocols if p not in TLS_PROTOCOLS]
    if unknown or not settings.enabled_protocols:
        raise SettingError("ssl.enabled.protocols", f"supported: {', '.join(TLS_PROTOCOLS)}")
    return settings


def _long(prop: str, text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise SettingError(prop, f"{text!r} is not an integer") from None


def _sasl(raw: Mapping[str, str], listener: str) -> SaslSettings:
    text = _get(raw, listener, "sasl.enabled.mechanisms") or "GSSAPI"
    mechanisms = tuple(m.strip() for m in text.split(",") if m.strip())
    for mech in mechanisms:
        if mech not in MECHANISMS:
            raise SettingError(
                "sasl.enabled.mechanisms",
                f"{mech} on listener {listener} is not supported (supported: "
                f"{', '.join(MECHANISMS)})",
            )
    if not mechanisms:
        raise SettingError("sasl.enabled.mechanisms", f"no mechanism for listener {listener}")
    jaas: dict[str, JaasEntry] = {}
    reauth: dict[str, int] = {}
    for mech in mechanisms:
        prop = f"listener.name.{listener.lower()}.{mech.lower()}.sasl.jaas.config"
        if prop in raw:
            try:
                entry = parse(raw[prop])
            except JaasError as exc:
                raise SettingError(prop, str(exc)) from None
            if entry.login_module != LOGIN_MODULES[mech]:
                raise SettingError(prop, f"{mech} needs {LOGIN_MODULES[mech]}")
            jaas[mech] = entry
        elif mech == PLAIN:
            # PlainServerCallbackHandler needs the user_<name> options of this entry.
            raise SettingError(prop, f"required for PLAIN on listener {listener}")
        found = _lookup(raw, listener, f"{mech.lower()}.connections.max.reauth.ms") or _lookup(
            raw, listener, "connections.max.reauth.ms"
        )
        reauth[mech] = _long(found[0], found[1]) if found else 0
    size = _lookup(raw, listener, "sasl.server.max.receive.size")
    return SaslSettings(
        mechanisms=mechanisms,
        jaas=jaas,
        reauth_ms=reauth,
        max_receive_size=_long(size[0], size[1]) if size else 524288,
    )


def unsecured_oauthbearer_warning(listener: str) -> str:
    """Start-up warning for a listener that takes OAUTHBEARER: its tokens are validated as
    Kafka's OAuthBearerUnsecuredValidatorCallbackHandler does, which Kafka documents as not
    for production (the tokens are unsigned: any client can name any principal)."""
    return (
        f"listener {listener} enables OAUTHBEARER with unsecured (unsigned, alg=none) tokens, "
        "as Kafka's OAuthBearerUnsecuredValidatorCallbackHandler: anyone can be anyone; "
        "use it only outside production"
    )


def listener_security(name: str, protocol: str, raw: Mapping[str, str]) -> ListenerSecurity:
    """Raises SettingError naming the property at fault."""
    tls = _tls(raw, name) if protocol in ("SSL", "SASL_SSL") else None
    sasl = _sasl(raw, name) if protocol in ("SASL_PLAINTEXT", "SASL_SSL") else None
    return ListenerSecurity(protocol, tls, sasl)


# Java plug-ins and rules that change who a client is: minikafka cannot load or apply them,
# and ignoring them would authenticate or name principals differently from Kafka.
_DEFAULTS_ONLY = {
    "ssl.principal.mapping.rules": "DEFAULT",
    "principal.builder.class": "",
    "sasl.server.callback.handler.class": "",
}


def check_unsupported(raw: Mapping[str, str]) -> None:
    """Raises SettingError for a security plug-in or rule set to anything but its default,
    with or without a listener (and mechanism) prefix."""
    for prop, value in raw.items():
        base = prop.split(".", 3)[3] if prop.startswith("listener.name.") else prop
        for name, default in _DEFAULTS_ONLY.items():
            if (base == name or base.endswith("." + name)) and value.strip() not in (
                default,
                "",
            ):
                raise SettingError(
                    prop, f"{value.strip()!r}: {name} other than its default is not supported"
                )


def authorizer(raw: Mapping[str, str]) -> AuthorizerSettings:
    name = raw.get("authorizer.class.name", "").strip()
    if name and name != STANDARD_AUTHORIZER:
        raise SettingError(
            "authorizer.class.name", f"{name}: minikafka implements {STANDARD_AUTHORIZER} only"
        )
    # StandardAuthorizer's configure: super.users is a semicolon-separated list.
    supers = tuple(p.strip() for p in raw.get("super.users", "").split(";") if p.strip())
    everyone = raw.get("allow.everyone.if.no.acl.found", "false").strip().lower()
    if everyone not in ("true", "false"):
        raise SettingError("allow.everyone.if.no.acl.found", f"{everyone!r} is not a boolean")
    return AuthorizerSettings(bool(name), supers, everyone == "true")
