"""KafkaPrincipal: who a connection authenticated as (``User:alice``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class KafkaPrincipal:
    type: str
    name: str

    def __str__(self) -> str:
        return f"{self.type}:{self.name}"

    @classmethod
    def parse(cls, text: str) -> KafkaPrincipal:
        """``Type:name`` as SecurityUtils.parseKafkaPrincipal; raises ValueError."""
        kind, sep, name = text.partition(":")
        if not sep or not kind:
            raise ValueError(f"{text!r} is not a principal of the form Type:name")
        return cls(kind, name)


# Kafka's KafkaPrincipal.ANONYMOUS: PLAINTEXT connections and TLS ones without a certificate.
ANONYMOUS = KafkaPrincipal("User", "ANONYMOUS")
