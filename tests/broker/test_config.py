"""Configuration: Kafka property names from file, environment and overrides."""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from pathlib import Path

import pytest

from broker.config.broker_config_table import ConfigSource, ConfigType
from broker.config.broker_configs import describe_broker
from broker.config.loader import load_config, make_config, properties_help
from broker.config.model import Config, ConfigError, Listener
from broker.config.properties import ACCEPTED_IGNORED, PROPERTIES
from broker.config.sources import env_var_to_property, parse_properties


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "server.properties"
    path.write_text(text, encoding="utf-8")
    return str(path)


def error_for(props: dict[str, str]) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        make_config(props)
    return info.value


# --- defaults -------------------------------------------------------------------------


def test_defaults_match_kafka_except_loopback_listener() -> None:
    config, warnings, sources = load_config(None, {}, [])
    assert warnings == []
    assert sources == {}
    assert config.listeners == (Listener("PLAINTEXT", "127.0.0.1", 9092, "127.0.0.1", 9092),)
    assert config.log_dir == "/tmp/kafka-logs"
    assert config.node_id == 1
    assert config.num_partitions == 1
    assert config.auto_create_topics_enable is True
    assert config.default_replication_factor == 1
    assert config.segment_bytes == 1073741824
    assert config.message_max_bytes == 1048588
    assert config.socket_request_max_bytes == 104857600
    assert config.index_interval_bytes == 4096
    assert config.producer_id_expiration_ms == 86400000
    assert config.producer_id_expiration_check_interval_ms == 600000
    assert config.log_level == "INFO"
    assert config.record_validation == "records"
    assert config.cluster_id is None
    assert config.source_summary == "defaults"
    assert config.explicit == ()


def test_every_config_field_gets_a_value_of_its_declared_type() -> None:
    config = make_config({"cluster.id": "abc"})
    hints = typing.get_type_hints(Config)
    for field in dataclasses.fields(Config):
        hint = hints[field.name]
        # isinstance accepts `str | None` but not `tuple[X, ...]`: check generics by origin.
        expected = hint if isinstance(hint, types.UnionType) else typing.get_origin(hint) or hint
        assert isinstance(getattr(config, field.name), expected), field.name


def test_table_attributes_are_config_fields() -> None:
    fields = {f.name for f in dataclasses.fields(Config)}
    attrs = [p.attr for p in PROPERTIES if p.attr is not None]
    assert len(attrs) == len(set(attrs))
    assert set(attrs) <= fields


def test_config_is_frozen() -> None:
    config = make_config()
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.node_id = 2  # type: ignore[misc]


# --- properties file format ---------------------------------------------------------------


def test_properties_format_separators_comments_and_continuations() -> None:
    text = (
        "# comment\n"
        "! also a comment\n"
        "\n"
        "   a=1\n"
        "b: 2\n"
        "c 3\n"
        "d = spaced value  \n"
        "e=first \\\n"
        "    second\n"
        "f=tab\\there\\u0041\n"
        "g\\=key=x\n"
        "a=last wins\n"
        "h=\n"
        "# not.continued=\\\n"
        "i=after comment\n"
    )
    assert parse_properties(text) == {
        "a": "last wins",
        "b": "2",
        "c": "3",
        "d": "spaced value  ",
        "e": "first second",
        "f": "tab\there\u0041",
        "g=key": "x",
        "h": "",
        "i": "after comment",
    }


def test_even_number_of_backslashes_does_not_continue() -> None:
    assert parse_properties("a=x\\\\\nb=y\n") == {"a": "x\\", "b": "y"}


def test_crlf_line_endings() -> None:
    assert parse_properties("a=1\r\nb=2\r\n") == {"a": "1", "b": "2"}


# --- sources and precedence ---------------------------------------------------------------


def test_precedence_file_then_env_then_override(tmp_path: Path) -> None:
    path = write(tmp_path, "num.partitions=2\nnode.id=5\nmessage.max.bytes=100\n")
    env = {"KAFKA_NUM_PARTITIONS": "3", "KAFKA_NODE_ID": "6"}
    config, warnings, sources = load_config(path, env, ["num.partitions=4"])
    assert warnings == []
    assert config.num_partitions == 4
    assert config.node_id == 6
    assert config.message_max_bytes == 100
    assert sources == {"num.partitions": "override", "node.id": "env", "message.max.bytes": "file"}
    assert "file" in config.source_summary
    assert "environment (2 set)" in config.source_summary
    assert "--override (1 set)" in config.source_summary
    assert dict(config.explicit)["num.partitions"] == "4"


def test_override_value_may_contain_equals_signs() -> None:
    config = make_config({"cluster.id": "a=b"})
    assert config.cluster_id == "a=b"


def test_override_without_equals_is_rejected() -> None:
    with pytest.raises(ConfigError) as info:
        load_config(None, {}, ["num.partitions"])
    assert info.value.property is None
    assert "key=value" in str(info.value)


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(str(tmp_path / "absent.properties"), {}, [])
    assert "absent.properties" in str(info.value)


# --- environment names --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("var", "name"),
    [
        ("KAFKA_LOG_DIRS", "log.dirs"),
        ("KAFKA_AUTO_CREATE_TOPICS_ENABLE", "auto.create.topics.enable"),
        ("KAFKA_NODE_ID", "node.id"),
        (
            "KAFKA_LISTENER_NAME_INTERNAL_SSL___CLIENT_AUTH",
            "listener.name.internal.ssl-client.auth",
        ),
        ("KAFKA_SOME__UNDERSCORED_NAME", "some_underscored.name"),
        ("KAFKA_MINIKAFKA_RECORD_VALIDATION", "minikafka.record.validation"),
    ],
)
def test_env_var_names_map_like_the_apache_kafka_image(var: str, name: str) -> None:
    assert env_var_to_property(var) == name


@pytest.mark.parametrize(
    "var",
    ["KAFKA_HEAP_OPTS", "KAFKA_OPTS", "KAFKA_JVM_PERFORMANCE_OPTS", "KAFKA_LOG4J_OPTS",
     "KAFKA_JMX_OPTS", "KAFKA_DEBUG", "KAFKA_VERSION", "PATH", "KAFKA_", "KAFKA__X"],
)  # fmt: skip
def test_non_property_env_vars_are_not_properties(var: str) -> None:
    assert env_var_to_property(var) is None


def test_non_property_env_vars_are_ignored_silently() -> None:
    env = {
        "KAFKA_HEAP_OPTS": "-Xmx1G",
        "KAFKA_OPTS": "-Dx=y",
        "KAFKA_JVM_PERFORMANCE_OPTS": "-server",
        "KAFKA_LOG4J_OPTS": "x",
        "KAFKA_JMX_OPTS": "x",
        "KAFKA_DEBUG": "y",
        "HOME": "/root",
    }
    config, warnings, sources = load_config(None, env, [])
    assert warnings == []
    assert sources == {}
    assert config == make_config()


def test_env_sets_properties_with_dashes_and_underscores_through_the_mapping() -> None:
    env = {"KAFKA_LOG_DIRS": "/data/k", "KAFKA_AUTO_CREATE_TOPICS_ENABLE": "FALSE"}
    config, warnings, sources = load_config(None, env, [])
    assert warnings == []
    assert config.log_dir == "/data/k"
    assert config.auto_create_topics_enable is False
    assert sources == {"log.dirs": "env", "auto.create.topics.enable": "env"}


def test_cluster_id_env_of_the_docker_image_is_accepted_and_kafka_prefixed_wins() -> None:
    config, _, _ = load_config(None, {"CLUSTER_ID": "abc"}, [])
    assert config.cluster_id == "abc"
    config, _, _ = load_config(None, {"CLUSTER_ID": "abc", "KAFKA_CLUSTER_ID": "xyz"}, [])
    assert config.cluster_id == "xyz"


def test_docker_quickstart_environment_loads_without_warnings() -> None:
    env = {
        "KAFKA_NODE_ID": "1",
        "KAFKA_PROCESS_ROLES": "broker,controller",
        "KAFKA_LISTENERS": "PLAINTEXT://:9092,CONTROLLER://:9093",
        "KAFKA_ADVERTISED_LISTENERS": "PLAINTEXT://localhost:9092",
        "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
        "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "KAFKA_CONTROLLER_QUORUM_VOTERS": "1@localhost:9093",
        "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1",
        "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1",
        "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR": "1",
        "KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
        "KAFKA_NUM_PARTITIONS": "3",
        "KAFKA_HEAP_OPTS": "-Xmx512M",
    }
    config, warnings, _ = load_config(None, env, [])
    assert warnings == []
    assert config.num_partitions == 3
    assert config.listeners == (Listener("PLAINTEXT", "", 9092, "localhost", 9092),)


# --- unknown properties -------------------------------------------------------------------


def test_unknown_properties_are_warned_about_by_name_and_not_fatal(tmp_path: Path) -> None:
    path = write(tmp_path, "no.such.thing=1\nnum.partitions=2\n")
    env = {"KAFKA_BOOTSTRAP_SERVERS": "x:9092"}
    config, warnings, sources = load_config(path, env, ["another.unknown=3"])
    assert config.num_partitions == 2
    assert len(warnings) == 3
    assert "'no.such.thing'" in warnings[0]
    assert "'bootstrap.servers'" in warnings[1]
    assert "KAFKA_BOOTSTRAP_SERVERS" in warnings[1]
    assert "'another.unknown'" in warnings[2]
    assert "no.such.thing" not in sources


def test_accepted_ignored_properties_do_not_warn() -> None:
    # Values Kafka accepts for each (1 where any number does).
    valid = {"process.roles": "broker", "security.inter.broker.protocol": "PLAINTEXT"}
    overrides = [f"{p.name}={valid.get(p.name, '1')}" for p in ACCEPTED_IGNORED]
    config, warnings, sources = load_config(None, {}, overrides)
    assert warnings == []
    assert config.listeners == make_config().listeners
    assert set(sources) == {p.name for p in ACCEPTED_IGNORED}


def test_replication_factor_above_one_is_accepted_with_a_warning() -> None:
    config, warnings, _ = load_config(None, {}, ["default.replication.factor=3"])
    assert config.default_replication_factor == 3
    assert len(warnings) == 1
    assert "default.replication.factor" in warnings[0]


# --- invalid values -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "value", "reason"),
    [
        ("num.partitions", "abc", "not an integer"),
        ("num.partitions", "1.5", "not an integer"),
        ("num.partitions", "0", "minimum of 1"),
        ("node.id", "-1", "minimum of 0"),
        ("message.max.bytes", "99999999999", "32-bit"),
        ("auto.create.topics.enable", "yes", "not a boolean"),
        ("log.segment.bytes", "13", "minimum of 14"),
        ("log.level", "TRACE", "DEBUG"),
        ("minikafka.record.validation", "all", "header"),
        ("listeners", "PLAINTEXT://localhost", "NAME://host:port"),
        ("listeners", "PLAINTEXT://localhost:99999", "out of range"),
        ("listeners", "localhost:9092", "NAME://host:port"),
        ("listeners", "PLAINTEXT://::1:9092", "brackets"),
        ("listeners", "PLAINTEXT://[zz::1]:9092", "IPv6"),
        ("listeners", "", "at least one listener"),
        ("log.dirs", "/a,/b", "single log directory"),
        ("listener.security.protocol.map", "PLAINTEXT:TLS", "unknown security protocol"),
    ],
)
def test_invalid_values_name_the_property(name: str, value: str, reason: str) -> None:
    error = error_for({name: value})
    assert error.property == name
    assert reason in error.message
    assert str(error).startswith(f"invalid value for {name}: ")


def test_error_names_the_alias_the_user_wrote_and_the_source() -> None:
    with pytest.raises(ConfigError) as info:
        load_config(None, {"KAFKA_SEGMENT_BYTES": "10"}, [])
    assert info.value.property == "segment.bytes"
    assert "KAFKA_SEGMENT_BYTES" in info.value.message


def test_values_are_trimmed_and_booleans_case_insensitive() -> None:
    config = make_config(
        {"num.partitions": " 7 ", "auto.create.topics.enable": " False", "log.level": "debug"}
    )
    assert config.num_partitions == 7
    assert config.auto_create_topics_enable is False
    assert config.log_level == "DEBUG"
    assert make_config({"log.level": "warn"}).log_level == "WARNING"
    assert make_config({"minikafka.record.validation": "HEADER"}).record_validation == "header"


# --- aliases ------------------------------------------------------------------------------


def test_aliases_set_the_canonical_property() -> None:
    config = make_config({"broker.id": "7", "log.dir": "/x", "segment.bytes": "1024"})
    assert (config.node_id, config.log_dir, config.segment_bytes) == (7, "/x", 1024)


def test_within_one_source_the_canonical_name_beats_its_alias(tmp_path: Path) -> None:
    path = write(tmp_path, "log.dirs=/kept\nlog.dir=/dropped\n")
    config, warnings, _ = load_config(path, {}, [])
    assert config.log_dir == "/kept"
    assert len(warnings) == 1
    assert "log.dir" in warnings[0]


def test_a_later_source_wins_whatever_the_spelling(tmp_path: Path) -> None:
    path = write(tmp_path, "node.id=3\n")
    config, _, sources = load_config(path, {"KAFKA_BROKER_ID": "4"}, [])
    assert config.node_id == 4
    assert sources == {"node.id": "env"}


# --- listeners ----------------------------------------------------------------------------


def test_several_listeners_each_with_its_own_advertised_address() -> None:
    config = make_config(
        {
            "listeners": "INTERNAL://0.0.0.0:9092,EXTERNAL://10.0.0.5:9094,LOCAL://localhost:0",
            "advertised.listeners": "EXTERNAL://kafka.example.com:19094,INTERNAL://kafka:9092",
            "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT,"
            "LOCAL:PLAINTEXT",
        }
    )
    assert config.listeners == (
        Listener("INTERNAL", "0.0.0.0", 9092, "kafka", 9092),
        Listener("EXTERNAL", "10.0.0.5", 9094, "kafka.example.com", 19094),
        Listener("LOCAL", "localhost", 0, "localhost", 0),
    )


def test_wildcard_bind_advertises_loopback() -> None:
    config = make_config(
        {
            "listeners": "PLAINTEXT://:9092,OTHER://[::]:9093,A://0.0.0.0:1",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,OTHER:PLAINTEXT,A:PLAINTEXT",
        }
    )
    assert [(lst.host, lst.advertised_host) for lst in config.listeners] == [
        ("", "127.0.0.1"),
        ("::", "::1"),
        ("0.0.0.0", "127.0.0.1"),
    ]


def test_ipv6_listener_and_advertised_address() -> None:
    config = make_config(
        {"listeners": "PLAINTEXT://[::1]:9092", "advertised.listeners": "PLAINTEXT://[fe80::1]:0"}
    )
    assert config.listeners == (Listener("PLAINTEXT", "::1", 9092, "fe80::1", 0),)


def test_port_zero_is_allowed_and_advertised_as_zero_until_bound() -> None:
    config = make_config({"listeners": "PLAINTEXT://127.0.0.1:0"})
    assert config.listeners == (Listener("PLAINTEXT", "127.0.0.1", 0, "127.0.0.1", 0),)


def test_listener_names_are_case_insensitive() -> None:
    config = make_config({"listeners": "plaintext://127.0.0.1:1"})
    assert config.listeners[0].name == "PLAINTEXT"


def test_controller_listener_is_not_served() -> None:
    config = make_config(
        {
            "listeners": "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
            "controller.listener.names": "CONTROLLER",
        }
    )
    assert [lst.name for lst in config.listeners] == ["PLAINTEXT"]


def test_only_controller_listeners_is_an_error() -> None:
    error = error_for(
        {"listeners": "CONTROLLER://127.0.0.1:9093", "controller.listener.names": "CONTROLLER"}
    )
    assert error.property == "listeners"


def test_tls_listener_without_a_keystore_is_an_error() -> None:
    error = error_for({"listeners": "SSL://127.0.0.1:9093", "ssl.keystore.type": "PEM"})
    assert error.property == "ssl.keystore.location"
    assert "SSL" in error.message
    error = error_for(
        {
            "listeners": "CLIENT://127.0.0.1:9093",
            "listener.security.protocol.map": "CLIENT:SASL_SSL",
            "listener.name.client.ssl.keystore.type": "PEM",
            "listener.name.client.sasl.enabled.mechanisms": "SCRAM-SHA-256",
        }
    )
    assert error.property == "ssl.keystore.location"


def test_jks_keystore_is_an_error_naming_pem() -> None:
    error = error_for(
        {"listeners": "SSL://127.0.0.1:9093", "ssl.keystore.location": "/x/server.jks"}
    )
    assert error.property == "listener.name.ssl.ssl.keystore.type"
    assert "PEM" in error.message


def test_listener_prefixed_security_configs_win_over_unprefixed_ones() -> None:
    config = make_config(
        {
            "listeners": "SSL://127.0.0.1:9093,SASL_PLAINTEXT://127.0.0.1:9094",
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": "/global.pem",
            "listener.name.ssl.ssl.keystore.location": "/ssl.pem",
            "listener.name.ssl.ssl.client.auth": "required",
            "sasl.enabled.mechanisms": "GSSAPI",
            "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": (
                "org.apache.kafka.common.security.plain.PlainLoginModule required "
                'username="admin" password="a" user_admin="a" user_bob="b=;\\"c";'
            ),
            "listener.name.sasl_plaintext.scram-sha-512.connections.max.reauth.ms": "5000",
        }
    )
    tls, sasl = config.listeners
    assert tls.protocol == "SSL" and tls.security.tls is not None
    assert tls.security.tls.keystore_location == "/ssl.pem"
    assert tls.security.tls.client_auth == "required"
    assert sasl.security.sasl is not None and sasl.security.tls is None
    assert sasl.security.sasl.mechanisms == ("PLAIN", "SCRAM-SHA-512")
    assert sasl.security.sasl.plain_users() == {"admin": "a", "bob": 'b=;"c'}
    assert sasl.security.sasl.reauth_ms == {"PLAIN": 0, "SCRAM-SHA-512": 5000}


def test_sasl_mechanism_kafka_has_and_minikafka_does_not_is_an_error() -> None:
    error = error_for({"listeners": "SASL_PLAINTEXT://127.0.0.1:9093"})
    assert error.property == "sasl.enabled.mechanisms"
    assert "GSSAPI" in error.message


def test_listener_missing_from_protocol_map_is_an_error() -> None:
    error = error_for({"listeners": "CLIENT://127.0.0.1:9093"})
    assert error.property == "listeners"
    assert "CLIENT" in error.message


@pytest.mark.parametrize(
    ("props", "prop", "reason"),
    [
        ({"advertised.listeners": "OTHER://h:1"}, "advertised.listeners", "not defined"),
        ({"advertised.listeners": "PLAINTEXT://0.0.0.0:1"}, "advertised.listeners", "routable"),
        ({"listeners": "PLAINTEXT://a:1,PLAINTEXT://b:2"}, "listeners", "more than once"),
    ],
)
def test_inconsistent_listeners_are_errors(props: dict[str, str], prop: str, reason: str) -> None:
    error = error_for(props)
    assert error.property == prop
    assert reason in error.message


def test_duplicate_port_check_ignores_ephemeral_ports() -> None:
    config = make_config(
        {
            "listeners": "PLAINTEXT://127.0.0.1:0,B://127.0.0.1:0",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,B:PLAINTEXT",
        }
    )
    assert len(config.listeners) == 2
    error = error_for(
        {
            "listeners": "PLAINTEXT://127.0.0.1:5,B://127.0.0.1:5",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,B:PLAINTEXT",
        }
    )
    assert "same port" in error.message


# --- Kafka's own KRaft server.properties ----------------------------------------------------

KRAFT_SERVER_PROPERTIES = """\
############################# Server Basics #############################

# The role of this server. Setting this puts us in KRaft mode
process.roles=broker,controller

# The node id associated with this instance's roles
node.id=1

# List of controller endpoints used connect to the controller cluster
controller.quorum.voters=1@localhost:9093
controller.quorum.bootstrap.servers=localhost:9093

############################# Socket Server Settings #############################
listeners=PLAINTEXT://:9092,CONTROLLER://:9093
inter.broker.listener.name=PLAINTEXT
advertised.listeners=PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,\\
    SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL
num.network.threads=3
num.io.threads=8
socket.send.buffer.bytes=102400
socket.receive.buffer.bytes=102400
socket.request.max.bytes=104857600

############################# Log Basics #############################
log.dirs=/tmp/kraft-combined-logs
num.partitions=1
num.recovery.threads.per.data.dir=1

############################# Internal Topic Settings  #############################
offsets.topic.replication.factor=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1

############################# Log Flush Policy #############################
#log.flush.interval.messages=10000
#log.flush.interval.ms=1000

############################# Log Retention Policy #############################
log.retention.hours=168
log.segment.bytes=1073741824
log.retention.check.interval.ms=300000
"""


def test_kafka_kraft_server_properties_loads_unchanged(tmp_path: Path) -> None:
    config, warnings, sources = load_config(write(tmp_path, KRAFT_SERVER_PROPERTIES), {}, [])
    assert warnings == []
    assert config.listeners == (Listener("PLAINTEXT", "", 9092, "localhost", 9092),)
    assert config.log_dir == "/tmp/kraft-combined-logs"
    assert config.node_id == 1
    assert set(sources.values()) == {"file"}
    assert config.source_summary.startswith("file ")


# --- help -----------------------------------------------------------------------------------


def test_help_lists_every_property_with_its_default() -> None:
    text = properties_help()
    for prop in PROPERTIES:
        default = "(none)" if prop.default is None else prop.default or '""'
        assert f"{prop.name} = {default}" in text
        assert prop.doc in text
    for prop in ACCEPTED_IGNORED:
        assert prop.name in text


def test_retention_and_roll_follow_kafkas_precedence() -> None:
    assert make_config().retention_ms == 168 * 3_600_000
    assert make_config({"log.retention.hours": "1"}).retention_ms == 3_600_000
    both = {"log.retention.hours": "1", "log.retention.minutes": "2"}
    assert make_config(both).retention_ms == 120_000
    assert make_config({**both, "log.retention.ms": "5"}).retention_ms == 5
    assert make_config({"retention.ms": "-1"}).retention_ms == -1
    assert make_config().segment_ms == 168 * 3_600_000
    assert make_config({"segment.ms": "1000"}).segment_ms == 1000
    assert make_config({"log.retention.bytes": "10"}).retention_bytes == 10


def test_flush_policy_defaults_to_never_and_flush_ms_alone_is_enough() -> None:
    default = make_config()
    assert default.flush_messages == default.flush_ms == 2**63 - 1
    assert default.flush_scheduler_interval_ms == 2**63 - 1
    timed = make_config({"log.flush.interval.ms": "200"})
    assert (timed.flush_ms, timed.flush_scheduler_interval_ms) == (200, 1000)
    assert make_config({"flush.messages": "1"}).flush_messages == 1
    with pytest.raises(ConfigError, match=r"log\.flush\.interval\.messages"):
        make_config({"log.flush.interval.messages": "0"})


# --- socket server limits (SocketServerConfigs, KafkaConfig.validateValues) ---------------


def test_connection_and_request_queue_limits_default_as_kafka() -> None:
    config = make_config()
    assert config.max_connections == 2**31 - 1
    assert config.max_connections_per_ip == 2**31 - 1
    assert config.max_connections_per_ip_overrides == ()
    assert config.connections_max_idle_ms == 600_000
    assert config.queued_max_requests == 500
    assert config.queued_max_request_bytes == -1


def test_per_ip_overrides_parse_as_host_count_pairs() -> None:
    config = make_config({"max.connections.per.ip.overrides": "broker-a:100, 127.0.0.1:200"})
    assert config.max_connections_per_ip_overrides == (("broker-a", 100), ("127.0.0.1", 200))
    assert error_for({"max.connections.per.ip.overrides": "no-count"}).property == (
        "max.connections.per.ip.overrides"
    )


@pytest.mark.parametrize(
    ("props", "name"),
    [
        ({"queued.max.request.bytes": "1000"}, "queued.max.request.bytes"),
        ({"max.connections.per.ip": "0"}, "max.connections.per.ip"),
        ({"connections.max.idle.ms": "100"}, "connections.max.idle.ms"),
        ({"queued.max.requests": "0"}, "queued.max.requests"),
        ({"max.connections": "-1"}, "max.connections"),
    ],
)
def test_socket_server_settings_kafka_refuses_are_refused(props: dict[str, str], name: str) -> None:
    assert error_for(props).property == name


def test_socket_server_settings_kafka_accepts_are_accepted() -> None:
    config = make_config(
        {
            "queued.max.request.bytes": str(200 * 1024 * 1024),
            "max.connections.per.ip": "0",
            "max.connections.per.ip.overrides": "127.0.0.1:5",
            "connections.max.idle.ms": "-1",
        }
    )
    assert config.queued_max_request_bytes == 200 * 1024 * 1024
    assert config.connections_max_idle_ms == -1


def test_offsets_retention_has_kafkas_names_defaults_and_minimums() -> None:
    default = make_config()
    assert default.offsets_retention_ms == 10080 * 60_000  # 7 days
    assert default.offsets_retention_check_interval_ms == 600_000
    assert make_config({"offsets.retention.minutes": "1"}).offsets_retention_ms == 60_000
    quick = {"offsets.retention.minutes": "1", "minikafka.offsets.retention.ms": "1500"}
    assert make_config(quick).offsets_retention_ms == 1500
    checks = make_config({"offsets.retention.check.interval.ms": "250"})
    assert checks.offsets_retention_check_interval_ms == 250
    for name in (
        "offsets.retention.minutes",
        "offsets.retention.check.interval.ms",
        "minikafka.offsets.retention.ms",
    ):
        with pytest.raises(ConfigError, match=name.replace(".", r"\.")):
            make_config({name: "0"})


def test_describe_configs_shows_the_offsets_retention_the_broker_acts_on() -> None:
    by_name = {e.name: e for e in describe_broker(make_config(), {}, {})}
    minutes = by_name["offsets.retention.minutes"]
    assert (minutes.value, minutes.type, minutes.read_only) == ("10080", ConfigType.INT, True)
    assert minutes.source == ConfigSource.DEFAULT_CONFIG
    assert "does not act on it" not in minutes.doc
    interval = by_name["offsets.retention.check.interval.ms"]
    assert (interval.value, interval.type) == ("600000", ConfigType.LONG)
    assert "does not act on it" not in interval.doc
    overridden = make_config({"offsets.retention.minutes": "5"})
    entry = {e.name: e for e in describe_broker(overridden, {}, {})}["offsets.retention.minutes"]
    assert (entry.value, entry.source) == ("5", ConfigSource.STATIC_BROKER_CONFIG)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("SCRAM-SHA-1=[name=a,password=b]", "The add-scram mechanism SCRAM-SHA-1 is not supported"),
        ("SCRAM-SHA-256=name=a,password=b", "start with ["),
        ("SCRAM-SHA-256=[password=b]", "You must supply 'name'"),
        ("SCRAM-SHA-256=[name=a]", "one of 'password' or 'saltedpassword'"),
        ("SCRAM-SHA-256=[name=a,password=b,iterations=100]", "between 4096 and 16384"),
        ("SCRAM-SHA-256=[name=a,password=b,colour=red]", "Unknown SCRAM configurations: colour"),
    ],
)
def test_bad_scram_bootstrap_users_stop_start_up_with_kafka_storages_messages(
    value: str, message: str
) -> None:
    error = error_for({"minikafka.scram.bootstrap.users": value})
    assert error.property == "minikafka.scram.bootstrap.users"
    assert message in error.message


def test_the_readme_security_example_loads_as_written(tmp_path: Path) -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    start = readme.index("\n## Security\n")
    section = readme[start : readme.index("\n## ", start + 1)]
    (example,) = re.findall(r"```properties\n(.*?)```", section, re.S)
    path = tmp_path / "server.properties"
    path.write_text(example)
    config, warnings, _ = load_config(str(path), {}, [])
    assert warnings == []
    plain, secure = config.listeners
    assert (plain.protocol, secure.protocol) == ("PLAINTEXT", "SASL_SSL")
    assert secure.security.sasl is not None
    assert secure.security.sasl.plain_users() == {"admin": "admin-secret", "alice": "alice-secret"}
    assert config.authorizer.enabled and config.authorizer.super_users == ("User:admin",)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("ssl.principal.mapping.rules", "RULE:^CN=(.*?),.*$/$1/L,DEFAULT"),
        ("listener.name.ssl.ssl.principal.mapping.rules", "RULE:^CN=(.*?),.*$/$1/"),
        ("principal.builder.class", "com.example.MyPrincipalBuilder"),
        ("sasl.server.callback.handler.class", "com.example.LdapCallbackHandler"),
        (
            "listener.name.sasl_plaintext.plain.sasl.server.callback.handler.class",
            "com.example.LdapCallbackHandler",
        ),
    ],
)
def test_security_plugins_minikafka_cannot_load_stop_start_up(name: str, value: str) -> None:
    # Silently ignoring them would authenticate or name principals differently from Kafka.
    error = error_for({name: value})
    assert error.property == name
    assert "not supported" in error.message


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        (
            "compression.type=brotli",
            "invalid value for compression.type: 'brotli': String must be one of: "
            "uncompressed, zstd, lz4, snappy, gzip, producer (from --override)",
        ),
        ("compression.gzip.level=12", "Value must be -1 or between 1 and 9"),
        ("log.cleanup.policy=compact,forever", "String must be one of: compact, delete"),
        ("log.message.timestamp.type=WallClock", "String must be one of: CreateTime"),
        ("log.cleaner.min.cleanable.ratio=1.5", "Value must be no more than 1"),
        ("num.io.threads=0", "Value must be at least 1"),
        ("offsets.topic.replication.factor=0", "Value must be at least 1"),
        ("process.roles=broker,voter", "String must be one of: broker, controller"),
        ("socket.send.buffer.bytes=lots", "Not a number of type INT"),
        ("offsets.topic.replication.factor=40000", "Not a number of type SHORT"),
        ("unclean.leader.election.enable=yes", "Expected value to be either true or false"),
    ],
)
def test_kafka_configs_not_acted_on_are_still_checked_as_kafka_does(
    setting: str, message: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        load_config(None, {}, [setting])
    assert message in str(refused.value)
    assert refused.value.property == setting.split("=")[0]


def test_kafka_values_of_configs_not_acted_on_are_accepted() -> None:
    settings = [
        "compression.type=zstd",
        "compression.gzip.level=-1",
        "log.cleanup.policy=compact,delete",
        "num.io.threads=8",
        "process.roles=broker,controller",
        "log.cleaner.min.cleanable.ratio=0.5",
        "unclean.leader.election.enable=TRUE",
    ]
    load_config(None, {}, settings)


def test_properties_without_effect_are_named() -> None:
    from broker.config.kafka_checks import without_effect

    assert without_effect(
        ["num.partitions", "compression.type", "process.roles", "ssl.keystore.location"]
    ) == ["compression.type", "process.roles"]
