"""Helpers shared by the admin handlers: Kafka's topic-name checks and config entries."""

from __future__ import annotations

from broker.config.topic_configs import ConfigEntry
from protocol.schema import Message
from storage.store import MAX_TOPIC_NAME_LENGTH, TopicInfo, valid_topic_name

# ConfigResource.Type ids.
RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4
RESOURCE_BROKER_LOGGER = 8
RESOURCE_GROUP = 32


def topic_name_error(name: str) -> str | None:
    """Why Kafka's Topic.validate refuses ``name`` (its wording), or None if valid."""
    if valid_topic_name(name):
        return None
    if not name:
        return "Topic name is illegal, it can't be empty"
    if name in (".", ".."):
        return 'Topic name cannot be "." or ".."'
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        return (
            f"Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME_LENGTH} "
            f"characters, topic name: {name}"
        )
    return (
        f'Topic name "{name}" is illegal, it contains a character other than ASCII '
        "alphanumerics, '.', '_' and '-'"
    )


def collision(name: str, topics: list[TopicInfo]) -> str | None:
    """Kafka refuses a topic whose name equals an existing one with '.' and '_' swapped:
    both map to the same metric names (Topic.hasCollision)."""
    unified = name.replace(".", "_")
    for info in topics:
        if info.name != name and info.name.replace(".", "_") == unified:
            return info.name
    return None


def config_entries(entries: list[ConfigEntry], keys: list[str] | None) -> list[ConfigEntry]:
    """The entries asked for (null or empty keys = all), in the table's order."""
    if not keys:
        return entries
    wanted = set(keys)
    return [e for e in entries if e.name in wanted]


def describe_entry(entry: ConfigEntry, synonyms: bool, documentation: bool) -> Message:
    return Message(
        name=entry.name,
        value=entry.value,
        read_only=entry.read_only,
        config_source=int(entry.source),
        is_default=entry.source == 5,
        is_sensitive=entry.sensitive,
        synonyms=[Message(name=s.name, value=s.value, source=int(s.source)) for s in entry.synonyms]
        if synonyms
        else [],
        config_type=int(entry.type),
        documentation=entry.doc if documentation else None,
    )
