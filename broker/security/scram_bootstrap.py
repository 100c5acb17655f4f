"""SCRAM users from the configuration, the way ``kafka-storage format --add-scram`` adds them
to a new Kafka cluster (ScramParser): ``minikafka.scram.bootstrap.users`` holds
semicolon-separated ``SCRAM-SHA-256=[name=alice,password=alice-secret]`` entries, each with
``name``, ``password`` (or base64 ``saltedpassword`` with ``salt``), and optionally base64
``salt`` and ``iterations`` (default 4096). As with format, they are written only into a new
data directory (no credentials file yet): changes made over the wire afterwards, deletions
included, are never undone by a restart. Only salted keys are stored.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from storage.scram_credential_store import ScramCredential

DEFAULT_ITERATIONS = 4096
MAX_ITERATIONS = 16384


@dataclass(frozen=True)
class BootstrapUser:
    mechanism: str
    name: str
    credential: ScramCredential


def _b64(what: str, text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except binascii.Error:
        raise ValueError(f"Failed to decode given {what}: {text}") from None


def _entry(text: str) -> BootstrapUser:
    # Imported here: the configuration is loaded on every start, SCRAM only when users are set.
    from broker.security.sasl_scram import MECHANISMS, credential
    from storage.scram_credential_store import ScramCredential

    mechanism, sep, rest = text.strip().partition("=")
    if not sep:
        raise ValueError(f"Failed to find equals sign in SCRAM argument '{text.strip()}'")
    if mechanism not in MECHANISMS:
        raise ValueError(f"The add-scram mechanism {mechanism} is not supported.")
    if not rest.startswith("["):
        raise ValueError("Expected configuration string to start with [")
    if not rest.endswith("]"):
        raise ValueError("Expected configuration string to end with ]")
    fields: dict[str, str] = {}
    for component in rest[1:-1].split(","):
        key, eq, value = component.partition("=")
        if not eq:
            raise ValueError(f"Unable to find an equals sign in '{component}'")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = value[1:-1]
        fields[key.strip()] = value
    name = fields.pop("name", None)
    if name is None:
        raise ValueError("You must supply 'name' to add-scram")
    salt = _b64("salt", fields.pop("salt")) if "salt" in fields else os.urandom(32)
    iterations_text = fields.pop("iterations", str(DEFAULT_ITERATIONS))
    try:
        iterations = int(iterations_text)
    except ValueError:
        raise ValueError(f"Failed to parse iterations count: {iterations_text}") from None
    minimum = MECHANISMS[mechanism][2]
    if not minimum <= iterations <= MAX_ITERATIONS:
        raise ValueError(f"iterations must be between {minimum} and {MAX_ITERATIONS}")
    password = fields.pop("password", None)
    salted_text = fields.pop("saltedpassword", None)
    if fields:
        raise ValueError(f"Unknown SCRAM configurations: {', '.join(sorted(fields))}")
    if password is not None:
        return BootstrapUser(mechanism, name, credential(mechanism, password, salt, iterations))
    if salted_text is None:
        raise ValueError("You must supply one of 'password' or 'saltedpassword' to add-scram")
    if "salt" not in rest:
        raise ValueError("You must supply 'salt' with 'saltedpassword' to add-scram")
    salted = _b64("saltedPassword", salted_text)
    digest = MECHANISMS[mechanism][1]
    client_key = hmac.new(salted, b"Client Key", digest).digest()
    return BootstrapUser(
        mechanism,
        name,
        ScramCredential(
            salt=salt,
            stored_key=hashlib.new(digest, client_key).digest(),
            server_key=hmac.new(salted, b"Server Key", digest).digest(),
            iterations=iterations,
        ),
    )


def parse(text: str) -> list[BootstrapUser]:
    """Raises ValueError with ScramParser's messages."""
    return [_entry(item) for item in text.split(";") if item.strip()]
