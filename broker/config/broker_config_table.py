"""Apache Kafka 4.0's broker configs, as a one-node KRaft Kafka 4.0.0 describes them.

Data only: for each config of KafkaConfig, its DescribeConfigs type, its default as Kafka
renders it (None where Kafka has none), and whether DynamicBrokerConfig.ALL_DYNAMIC_CONFIGS
holds it (read_only = not dynamic). Taken from DescribeConfigs answers a Kafka 4.0.0 broker
gave (kafka-oracle: admin_confluent_configs, admin_kafkapython_configs) and checked against
Kafka's sources (server/src/main/java/org/apache/kafka/server/config/*, KafkaConfig.scala,
DynamicBrokerConfig.scala). PASSWORD configs are sensitive: Kafka never shows their value.

The rules that use this table live in broker.config.broker_configs; this module imports nothing
from the broker so that broker.config can use the names.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum


class ConfigType(IntEnum):
    """DescribeConfigs v3+ config_type (Kafka's DescribeConfigsResponse.ConfigType)."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


class ConfigSource(IntEnum):
    """DescribeConfigs config_source (Kafka's DescribeConfigsResponse.ConfigSource)."""

    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    GROUP_CONFIG = 8


@dataclass(frozen=True, slots=True)
class BrokerConfigDef:
    name: str
    type: ConfigType
    # Kafka's default as DescribeConfigs renders it; None where Kafka has none.
    default: str | None
    # In DynamicBrokerConfig.ALL_DYNAMIC_CONFIGS: alterable with (Incremental)AlterConfigs.
    dynamic: bool

    @property
    def sensitive(self) -> bool:
        # KafkaConfig.maybeSensitive: PASSWORD (and unknown) types hide their value.
        return self.type in (ConfigType.PASSWORD, ConfigType.UNKNOWN)


# Kafka's SslConfigs.RECONFIGURABLE_CONFIGS (DynamicBrokerConfig.DynamicSecurityConfigs):
# dynamic only per listener ("listener.name.<name>.<config>"), never by their bare name.
LISTENER_ONLY_SECURITY_CONFIGS = frozenset(
    {
        "ssl.keystore.type",
        "ssl.keystore.location",
        "ssl.keystore.password",
        "ssl.key.password",
        "ssl.truststore.type",
        "ssl.truststore.location",
        "ssl.truststore.password",
        "ssl.keystore.certificate.chain",
        "ssl.keystore.key",
        "ssl.truststore.certificates",
    }
)

# DynamicBrokerConfig.PerBrokerConfigs: DynamicListenerConfig.ReconfigurableConfigs and the
# security configs, less the three cluster-level listener configs. Refused at the
# cluster-default level (empty resource name).
PER_BROKER_CONFIGS = LISTENER_ONLY_SECURITY_CONFIGS | frozenset(
    {
        "listeners",
        "listener.security.protocol.map",
        "principal.builder.class",
        "ssl.protocol",
        "ssl.provider",
        "ssl.cipher.suites",
        "ssl.enabled.protocols",
        "ssl.keymanager.algorithm",
        "ssl.trustmanager.algorithm",
        "ssl.endpoint.identification.algorithm",
        "ssl.secure.random.implementation",
        "ssl.client.auth",
        "ssl.engine.factory.class",
        "sasl.mechanism.inter.broker.protocol",
        "sasl.jaas.config",
        "sasl.enabled.mechanisms",
        "sasl.kerberos.service.name",
        "sasl.kerberos.kinit.cmd",
        "sasl.kerberos.ticket.renew.window.factor",
        "sasl.kerberos.ticket.renew.jitter",
        "sasl.kerberos.min.time.before.relogin",
        "sasl.kerberos.principal.to.local.rules",
        "sasl.login.refresh.window.factor",
        "sasl.login.refresh.window.jitter",
        "sasl.login.refresh.min.period.seconds",
        "sasl.login.refresh.buffer.seconds",
    }
)

# Names that stand for one setting in different units, strongest first
# (DynamicBrokerConfig.brokerConfigSynonyms).
SYNONYM_GROUPS: tuple[tuple[str, ...], ...] = (
    ("log.roll.ms", "log.roll.hours"),
    ("log.roll.jitter.ms", "log.roll.jitter.hours"),
    ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
)
# log.flush.interval.ms falls back on log.flush.scheduler.interval.ms, not the other way.
FLUSH_SYNONYMS = ("log.flush.interval.ms", "log.flush.scheduler.interval.ms")

_T = ConfigType
_D = True  # dynamic
_S = False  # static (read-only)

# fmt: off
BROKER_CONFIGS: dict[str, BrokerConfigDef] = {
    d.name: d
    for d in (
        BrokerConfigDef("add.partitions.to.txn.retry.backoff.max.ms", _T.INT, "100", _S),
        BrokerConfigDef("add.partitions.to.txn.retry.backoff.ms", _T.INT, "20", _S),
        BrokerConfigDef("advertised.listeners", _T.STRING, None, _S),
        BrokerConfigDef("alter.config.policy.class.name", _T.CLASS, None, _S),
        BrokerConfigDef("alter.log.dirs.replication.quota.window.num", _T.INT, "11", _S),
        BrokerConfigDef("alter.log.dirs.replication.quota.window.size.seconds", _T.INT, "1", _S),
        BrokerConfigDef("authorizer.class.name", _T.STRING, "", _S),
        BrokerConfigDef("auto.create.topics.enable", _T.BOOLEAN, "true", _S),
        BrokerConfigDef("auto.leader.rebalance.enable", _T.BOOLEAN, "true", _S),
        BrokerConfigDef("background.threads", _T.INT, "10", _D),
        BrokerConfigDef("broker.heartbeat.interval.ms", _T.INT, "2000", _S),
        BrokerConfigDef("broker.id", _T.INT, "-1", _S),
        BrokerConfigDef("broker.rack", _T.STRING, None, _S),
        BrokerConfigDef("broker.session.timeout.ms", _T.INT, "9000", _S),
        BrokerConfigDef("client.quota.callback.class", _T.CLASS, None, _S),
        BrokerConfigDef("compression.gzip.level", _T.INT, "-1", _D),
        BrokerConfigDef("compression.lz4.level", _T.INT, "9", _D),
        BrokerConfigDef("compression.type", _T.STRING, "producer", _D),
        BrokerConfigDef("compression.zstd.level", _T.INT, "3", _D),
        BrokerConfigDef("connection.failed.authentication.delay.ms", _T.INT, "100", _S),
        BrokerConfigDef("connections.max.idle.ms", _T.LONG, "600000", _S),
        BrokerConfigDef("connections.max.reauth.ms", _T.LONG, "0", _S),
        BrokerConfigDef("controlled.shutdown.enable", _T.BOOLEAN, "true", _S),
        BrokerConfigDef("controller.listener.names", _T.STRING, None, _S),
        BrokerConfigDef("controller.quorum.append.linger.ms", _T.INT, "25", _S),
        BrokerConfigDef("controller.quorum.bootstrap.servers", _T.LIST, "", _S),
        BrokerConfigDef("controller.quorum.election.backoff.max.ms", _T.INT, "1000", _S),
        BrokerConfigDef("controller.quorum.election.timeout.ms", _T.INT, "1000", _S),
        BrokerConfigDef("controller.quorum.fetch.timeout.ms", _T.INT, "2000", _S),
        BrokerConfigDef("controller.quorum.request.timeout.ms", _T.INT, "2000", _S),
        BrokerConfigDef("controller.quorum.retry.backoff.ms", _T.INT, "20", _S),
        BrokerConfigDef("controller.quorum.voters", _T.LIST, "", _S),
        BrokerConfigDef("controller.quota.window.num", _T.INT, "11", _S),
        BrokerConfigDef("controller.quota.window.size.seconds", _T.INT, "1", _S),
        BrokerConfigDef("controller.socket.timeout.ms", _T.INT, "30000", _S),
        BrokerConfigDef("create.topic.policy.class.name", _T.CLASS, None, _S),
        BrokerConfigDef("default.replication.factor", _T.INT, "1", _S),
        BrokerConfigDef("delegation.token.expiry.check.interval.ms", _T.LONG, "3600000", _S),
        BrokerConfigDef("delegation.token.expiry.time.ms", _T.LONG, "86400000", _S),
        BrokerConfigDef("delegation.token.max.lifetime.ms", _T.LONG, "604800000", _S),
        BrokerConfigDef("delegation.token.secret.key", _T.PASSWORD, None, _S),
        BrokerConfigDef("delete.records.purgatory.purge.interval.requests", _T.INT, "1", _S),
        BrokerConfigDef("delete.topic.enable", _T.BOOLEAN, "true", _S),
        BrokerConfigDef("early.start.listeners", _T.STRING, None, _S),
        BrokerConfigDef("fetch.max.bytes", _T.INT, "57671680", _S),
        BrokerConfigDef("fetch.purgatory.purge.interval.requests", _T.INT, "1000", _S),
        BrokerConfigDef("group.consumer.assignors", _T.LIST, "uniform,range", _S),
        BrokerConfigDef("group.consumer.heartbeat.interval.ms", _T.INT, "5000", _S),
        BrokerConfigDef("group.consumer.max.heartbeat.interval.ms", _T.INT, "15000", _S),
        BrokerConfigDef("group.consumer.max.session.timeout.ms", _T.INT, "60000", _S),
        BrokerConfigDef("group.consumer.max.size", _T.INT, "2147483647", _S),
        BrokerConfigDef("group.consumer.migration.policy", _T.STRING, "bidirectional", _S),
        BrokerConfigDef("group.consumer.min.heartbeat.interval.ms", _T.INT, "5000", _S),
        BrokerConfigDef("group.consumer.min.session.timeout.ms", _T.INT, "45000", _S),
        BrokerConfigDef("group.consumer.session.timeout.ms", _T.INT, "45000", _S),
        BrokerConfigDef("group.coordinator.append.linger.ms", _T.INT, "5", _S),
        BrokerConfigDef("group.coordinator.rebalance.protocols", _T.LIST, "classic,consumer", _S),
        BrokerConfigDef("group.coordinator.threads", _T.INT, "4", _S),
        BrokerConfigDef("group.initial.rebalance.delay.ms", _T.INT, "3000", _S),
        BrokerConfigDef("group.max.session.timeout.ms", _T.INT, "1800000", _S),
        BrokerConfigDef("group.max.size", _T.INT, "2147483647", _S),
        BrokerConfigDef("group.min.session.timeout.ms", _T.INT, "6000", _S),
        BrokerConfigDef("group.share.delivery.count.limit", _T.INT, "5", _S),
        BrokerConfigDef("group.share.heartbeat.interval.ms", _T.INT, "5000", _S),
        BrokerConfigDef("group.share.max.groups", _T.SHORT, "10", _S),
        BrokerConfigDef("group.share.max.heartbeat.interval.ms", _T.INT, "15000", _S),
        BrokerConfigDef("group.share.max.record.lock.duration.ms", _T.INT, "60000", _S),
        BrokerConfigDef("group.share.max.session.timeout.ms", _T.INT, "60000", _S),
        BrokerConfigDef("group.share.max.size", _T.INT, "200", _S),
        BrokerConfigDef("group.share.min.heartbeat.interval.ms", _T.INT, "5000", _S),
        BrokerConfigDef("group.share.min.record.lock.duration.ms", _T.INT, "15000", _S),
        BrokerConfigDef("group.share.min.session.timeout.ms", _T.INT, "45000", _S),
        BrokerConfigDef("group.share.partition.max.record.locks", _T.INT, "200", _S),
        BrokerConfigDef("group.share.record.lock.duration.ms", _T.INT, "30000", _S),
        BrokerConfigDef("group.share.session.timeout.ms", _T.INT, "45000", _S),
        BrokerConfigDef("initial.broker.registration.timeout.ms", _T.INT, "60000", _S),
        BrokerConfigDef("inter.broker.listener.name", _T.STRING, None, _S),
        BrokerConfigDef("kafka.metrics.polling.interval.secs", _T.INT, "10", _S),
        BrokerConfigDef("kafka.metrics.reporters", _T.LIST, "", _S),
        BrokerConfigDef("leader.imbalance.check.interval.seconds", _T.LONG, "300", _S),
        BrokerConfigDef(
            "listener.security.protocol.map",
            _T.STRING,
            "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT",
            _D,
        ),
        BrokerConfigDef("listeners", _T.STRING, "PLAINTEXT://:9092", _D),
        BrokerConfigDef("log.cleaner.backoff.ms", _T.LONG, "15000", _D),
        BrokerConfigDef("log.cleaner.dedupe.buffer.size", _T.LONG, "134217728", _D),
        BrokerConfigDef("log.cleaner.delete.retention.ms", _T.LONG, "86400000", _D),
        BrokerConfigDef("log.cleaner.enable", _T.BOOLEAN, "true", _S),
        BrokerConfigDef("log.cleaner.io.buffer.load.factor", _T.DOUBLE, "0.9", _D),
        BrokerConfigDef("log.cleaner.io.buffer.size", _T.INT, "524288", _D),
        BrokerConfigDef(
            "log.cleaner.io.max.bytes.per.second",
            _T.DOUBLE,
            "1.7976931348623157E308",
            _D,
        ),
        BrokerConfigDef("log.cleaner.max.compaction.lag.ms", _T.LONG, "9223372036854775807", _D),
        BrokerConfigDef("log.cleaner.min.cleanable.ratio", _T.DOUBLE, "0.5", _D),
        BrokerConfigDef("log.cleaner.min.compaction.lag.ms", _T.LONG, "0", _D),
        BrokerConfigDef("log.cleaner.threads", _T.INT, "1", _D),
        BrokerConfigDef("log.cleanup.policy", _T.LIST, "delete", _D),
        BrokerConfigDef("log.dir", _T.STRING, "/tmp/kafka-logs", _S),
        BrokerConfigDef("log.dir.failure.timeout.ms", _T.LONG, "30000", _S),
        BrokerConfigDef("log.dirs", _T.STRING, None, _S),
        BrokerConfigDef("log.flush.interval.messages", _T.LONG, "9223372036854775807", _D),
        BrokerConfigDef("log.flush.interval.ms", _T.LONG, None, _D),
        BrokerConfigDef("log.flush.offset.checkpoint.interval.ms", _T.INT, "60000", _S),
        BrokerConfigDef("log.flush.scheduler.interval.ms", _T.LONG, "9223372036854775807", _S),
        BrokerConfigDef("log.flush.start.offset.checkpoint.interval.ms", _T.INT, "60000", _S),
        BrokerConfigDef("log.index.interval.bytes", _T.INT, "4096", _D),
        BrokerConfigDef("log.index.size.max.bytes", _T.INT, "10485760", _D),
        BrokerConfigDef("log.local.retention.bytes", _T.LONG, "-2", _D),
        BrokerConfigDef("log.local.retention.ms", _T.LONG, "-2", _D),
        BrokerConfigDef("log.message.timestamp.after.max.ms", _T.LONG, "3600000", _D),
        BrokerConfigDef("log.message.timestamp.before.max.ms", _T.LONG, "9223372036854775807", _D),
        BrokerConfigDef("log.message.timestamp.type", _T.STRING, "CreateTime", _D),
        BrokerConfigDef("log.preallocate", _T.BOOLEAN, "false", _D),
        BrokerConfigDef("log.retention.bytes", _T.LONG, "-1", _D),
        BrokerConfigDef("log.retention.check.interval.ms", _T.LONG, "300000", _S),
        BrokerConfigDef("log.retention.hours", _T.INT, "168", _S),
        BrokerConfigDef("log.retention.minutes", _T.INT, None, _S),
        BrokerConfigDef("log.retention.ms", _T.LONG, None, _D),
        BrokerConfigDef("log.roll.hours", _T.INT, "168", _S),
        BrokerConfigDef("log.roll.jitter.hours", _T.INT, "0", _S),
        BrokerConfigDef("log.roll.jitter.ms", _T.LONG, None, _D),
        BrokerConfigDef("log.roll.ms", _T.LONG, None, _D),
        BrokerConfigDef("log.segment.bytes", _T.INT, "1073741824", _D),
        BrokerConfigDef("log.segment.delete.delay.ms", _T.LONG, "60000", _D),
        BrokerConfigDef("max.connection.creation.rate", _T.INT, "2147483647", _D),
        BrokerConfigDef("max.connections", _T.INT, "2147483647", _D),
        BrokerConfigDef("max.connections.per.ip", _T.INT, "2147483647", _D),
        BrokerConfigDef("max.connections.per.ip.overrides", _T.STRING, "", _D),
        BrokerConfigDef("max.incremental.fetch.session.cache.slots", _T.INT, "1000", _S),
        BrokerConfigDef("max.request.partition.size.limit", _T.INT, "2000", _S),
        BrokerConfigDef("message.max.bytes", _T.INT, "1048588", _D),
        BrokerConfigDef("metadata.log.dir", _T.STRING, None, _S),
        BrokerConfigDef(
            "metadata.log.max.record.bytes.between.snapshots",
            _T.LONG,
            "20971520",
            _S,
        ),
        BrokerConfigDef("metadata.log.max.snapshot.interval.ms", _T.LONG, "3600000", _S),
        BrokerConfigDef("metadata.log.segment.bytes", _T.INT, "1073741824", _S),
        BrokerConfigDef("metadata.log.segment.ms", _T.LONG, "604800000", _S),
        BrokerConfigDef("metadata.max.idle.interval.ms", _T.INT, "500", _S),
        BrokerConfigDef("metadata.max.retention.bytes", _T.LONG, "104857600", _S),
        BrokerConfigDef("metadata.max.retention.ms", _T.LONG, "604800000", _S),
        BrokerConfigDef(
            "metric.reporters",
            _T.LIST,
            "org.apache.kafka.common.metrics.JmxReporter",
            _D,
        ),
        BrokerConfigDef("metrics.num.samples", _T.INT, "2", _S),
        BrokerConfigDef("metrics.recording.level", _T.STRING, "INFO", _S),
        BrokerConfigDef("metrics.sample.window.ms", _T.LONG, "30000", _S),
        BrokerConfigDef("min.insync.replicas", _T.INT, "1", _D),
        BrokerConfigDef("node.id", _T.INT, None, _S),
        BrokerConfigDef("num.io.threads", _T.INT, "8", _D),
        BrokerConfigDef("num.network.threads", _T.INT, "3", _D),
        BrokerConfigDef("num.partitions", _T.INT, "1", _S),
        BrokerConfigDef("num.recovery.threads.per.data.dir", _T.INT, "2", _D),
        BrokerConfigDef("num.replica.alter.log.dirs.threads", _T.INT, None, _S),
        BrokerConfigDef("num.replica.fetchers", _T.INT, "1", _D),
        BrokerConfigDef("offset.metadata.max.bytes", _T.INT, "4096", _S),
        BrokerConfigDef("offsets.commit.timeout.ms", _T.INT, "5000", _S),
        BrokerConfigDef("offsets.load.buffer.size", _T.INT, "5242880", _S),
        BrokerConfigDef("offsets.retention.check.interval.ms", _T.LONG, "600000", _S),
        BrokerConfigDef("offsets.retention.minutes", _T.INT, "10080", _S),
        BrokerConfigDef("offsets.topic.compression.codec", _T.INT, "0", _S),
        BrokerConfigDef("offsets.topic.num.partitions", _T.INT, "50", _S),
        BrokerConfigDef("offsets.topic.replication.factor", _T.SHORT, "3", _S),
        BrokerConfigDef("offsets.topic.segment.bytes", _T.INT, "104857600", _S),
        BrokerConfigDef(
            "principal.builder.class",
            _T.CLASS,
            "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder",
            _D,
        ),
        BrokerConfigDef("process.roles", _T.LIST, None, _S),
        BrokerConfigDef("producer.id.expiration.ms", _T.INT, "86400000", _D),
        BrokerConfigDef("producer.purgatory.purge.interval.requests", _T.INT, "1000", _S),
        BrokerConfigDef("queued.max.request.bytes", _T.LONG, "-1", _S),
        BrokerConfigDef("queued.max.requests", _T.INT, "500", _S),
        BrokerConfigDef("quota.window.num", _T.INT, "11", _S),
        BrokerConfigDef("quota.window.size.seconds", _T.INT, "1", _S),
        BrokerConfigDef("remote.fetch.max.wait.ms", _T.INT, "500", _D),
        BrokerConfigDef("remote.list.offsets.request.timeout.ms", _T.LONG, "30000", _D),
        BrokerConfigDef("remote.log.index.file.cache.total.size.bytes", _T.LONG, "1073741824", _D),
        BrokerConfigDef("remote.log.manager.copier.thread.pool.size", _T.INT, "10", _D),
        BrokerConfigDef(
            "remote.log.manager.copy.max.bytes.per.second",
            _T.LONG,
            "9223372036854775807",
            _D,
        ),
        BrokerConfigDef("remote.log.manager.copy.quota.window.num", _T.INT, "11", _S),
        BrokerConfigDef("remote.log.manager.copy.quota.window.size.seconds", _T.INT, "1", _S),
        BrokerConfigDef("remote.log.manager.expiration.thread.pool.size", _T.INT, "10", _D),
        BrokerConfigDef(
            "remote.log.manager.fetch.max.bytes.per.second",
            _T.LONG,
            "9223372036854775807",
            _D,
        ),
        BrokerConfigDef("remote.log.manager.fetch.quota.window.num", _T.INT, "11", _S),
        BrokerConfigDef("remote.log.manager.fetch.quota.window.size.seconds", _T.INT, "1", _S),
        BrokerConfigDef("remote.log.manager.task.interval.ms", _T.LONG, "30000", _S),
        BrokerConfigDef("remote.log.manager.thread.pool.size", _T.INT, "2", _S),
        BrokerConfigDef("remote.log.metadata.custom.metadata.max.bytes", _T.INT, "128", _S),
        BrokerConfigDef(
            "remote.log.metadata.manager.class.name",
            _T.STRING,
            "org.apache.kafka.server.log.remote.metadata.storage.TopicBasedRemoteLogMetadataManager",
            _S,
        ),
        BrokerConfigDef("remote.log.metadata.manager.class.path", _T.STRING, None, _S),
        BrokerConfigDef("remote.log.metadata.manager.impl.prefix", _T.STRING, "rlmm.config.", _S),
        BrokerConfigDef("remote.log.metadata.manager.listener.name", _T.STRING, None, _S),
        BrokerConfigDef("remote.log.reader.max.pending.tasks", _T.INT, "100", _S),
        BrokerConfigDef("remote.log.reader.threads", _T.INT, "10", _D),
        BrokerConfigDef("remote.log.storage.manager.class.name", _T.STRING, None, _S),
        BrokerConfigDef("remote.log.storage.manager.class.path", _T.STRING, None, _S),
        BrokerConfigDef("remote.log.storage.manager.impl.prefix", _T.STRING, "rsm.config.", _S),
        BrokerConfigDef("remote.log.storage.system.enable", _T.BOOLEAN, "false", _S),
        BrokerConfigDef("replica.fetch.backoff.ms", _T.INT, "1000", _S),
        BrokerConfigDef("replica.fetch.max.bytes", _T.INT, "1048576", _S),
        BrokerConfigDef("replica.fetch.min.bytes", _T.INT, "1", _S),
        BrokerConfigDef("replica.fetch.response.max.bytes", _T.INT, "10485760", _S),
        BrokerConfigDef("replica.fetch.wait.max.ms", _T.INT, "500", _S),
        BrokerConfigDef("replica.high.watermark.checkpoint.interval.ms", _T.LONG, "5000", _S),
        BrokerConfigDef("replica.lag.time.max.ms", _T.LONG, "30000", _S),
        BrokerConfigDef("replica.selector.class", _T.STRING, None, _S),
        BrokerConfigDef("replica.socket.receive.buffer.bytes", _T.INT, "65536", _S),
        BrokerConfigDef("replica.socket.timeout.ms", _T.INT, "30000", _S),
        BrokerConfigDef("replication.quota.window.num", _T.INT, "11", _S),
        BrokerConfigDef("replication.quota.window.size.seconds", _T.INT, "1", _S),
        BrokerConfigDef("request.timeout.ms", _T.INT, "30000", _S),
        BrokerConfigDef("sasl.client.callback.handler.class", _T.CLASS, None, _S),
        BrokerConfigDef("sasl.enabled.mechanisms", _T.LIST, "GSSAPI", _D),
        BrokerConfigDef("sasl.jaas.config", _T.PASSWORD, None, _D),
        BrokerConfigDef("sasl.kerberos.kinit.cmd", _T.STRING, "/usr/bin/kinit", _D),
        BrokerConfigDef("sasl.kerberos.min.time.before.relogin", _T.LONG, "60000", _D),
        BrokerConfigDef("sasl.kerberos.principal.to.local.rules", _T.LIST, "DEFAULT", _D),
        BrokerConfigDef("sasl.kerberos.service.name", _T.STRING, None, _D),
        BrokerConfigDef("sasl.kerberos.ticket.renew.jitter", _T.DOUBLE, "0.05", _D),
        BrokerConfigDef("sasl.kerberos.ticket.renew.window.factor", _T.DOUBLE, "0.8", _D),
        BrokerConfigDef("sasl.login.callback.handler.class", _T.CLASS, None, _S),
        BrokerConfigDef("sasl.login.class", _T.CLASS, None, _S),
        BrokerConfigDef("sasl.login.connect.timeout.ms", _T.INT, None, _S),
        BrokerConfigDef("sasl.login.read.timeout.ms", _T.INT, None, _S),
        BrokerConfigDef("sasl.login.refresh.buffer.seconds", _T.SHORT, "300", _D),
        BrokerConfigDef("sasl.login.refresh.min.period.seconds", _T.SHORT, "60", _D),
        BrokerConfigDef("sasl.login.refresh.window.factor", _T.DOUBLE, "0.8", _D),
        BrokerConfigDef("sasl.login.refresh.window.jitter", _T.DOUBLE, "0.05", _D),
        BrokerConfigDef("sasl.login.retry.backoff.max.ms", _T.LONG, "10000", _S),
        BrokerConfigDef("sasl.login.retry.backoff.ms", _T.LONG, "100", _S),
        BrokerConfigDef("sasl.mechanism.controller.protocol", _T.STRING, "GSSAPI", _S),
        BrokerConfigDef("sasl.mechanism.inter.broker.protocol", _T.STRING, "GSSAPI", _D),
        BrokerConfigDef("sasl.oauthbearer.clock.skew.seconds", _T.INT, "30", _S),
        BrokerConfigDef("sasl.oauthbearer.expected.audience", _T.LIST, None, _S),
        BrokerConfigDef("sasl.oauthbearer.expected.issuer", _T.STRING, None, _S),
        BrokerConfigDef("sasl.oauthbearer.jwks.endpoint.refresh.ms", _T.LONG, "3600000", _S),
        BrokerConfigDef(
            "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms",
            _T.LONG,
            "10000",
            _S,
        ),
        BrokerConfigDef("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", _T.LONG, "100", _S),
        BrokerConfigDef("sasl.oauthbearer.jwks.endpoint.url", _T.STRING, None, _S),
        BrokerConfigDef("sasl.oauthbearer.scope.claim.name", _T.STRING, "scope", _S),
        BrokerConfigDef("sasl.oauthbearer.sub.claim.name", _T.STRING, "sub", _S),
        BrokerConfigDef("sasl.oauthbearer.token.endpoint.url", _T.STRING, None, _S),
        BrokerConfigDef("sasl.server.callback.handler.class", _T.CLASS, None, _S),
        BrokerConfigDef("sasl.server.max.receive.size", _T.INT, "524288", _S),
        BrokerConfigDef("security.inter.broker.protocol", _T.STRING, "PLAINTEXT", _S),
        BrokerConfigDef("security.providers", _T.STRING, None, _S),
        BrokerConfigDef("share.coordinator.append.linger.ms", _T.INT, "10", _S),
        BrokerConfigDef("share.coordinator.load.buffer.size", _T.INT, "5242880", _S),
        BrokerConfigDef(
            "share.coordinator.snapshot.update.records.per.snapshot",
            _T.INT,
            "500",
            _S,
        ),
        BrokerConfigDef("share.coordinator.state.topic.compression.codec", _T.INT, "0", _S),
        BrokerConfigDef("share.coordinator.state.topic.min.isr", _T.SHORT, "2", _S),
        BrokerConfigDef("share.coordinator.state.topic.num.partitions", _T.INT, "50", _S),
        BrokerConfigDef("share.coordinator.state.topic.replication.factor", _T.SHORT, "3", _S),
        BrokerConfigDef("share.coordinator.state.topic.segment.bytes", _T.INT, "104857600", _S),
        BrokerConfigDef("share.coordinator.threads", _T.INT, "1", _S),
        BrokerConfigDef("share.coordinator.write.timeout.ms", _T.INT, "5000", _S),
        BrokerConfigDef("share.fetch.purgatory.purge.interval.requests", _T.INT, "1000", _S),
        BrokerConfigDef("socket.connection.setup.timeout.max.ms", _T.LONG, "30000", _S),
        BrokerConfigDef("socket.connection.setup.timeout.ms", _T.LONG, "10000", _S),
        BrokerConfigDef("socket.listen.backlog.size", _T.INT, "50", _S),
        BrokerConfigDef("socket.receive.buffer.bytes", _T.INT, "102400", _S),
        BrokerConfigDef("socket.request.max.bytes", _T.INT, "104857600", _S),
        BrokerConfigDef("socket.send.buffer.bytes", _T.INT, "102400", _S),
        BrokerConfigDef("ssl.allow.dn.changes", _T.BOOLEAN, "false", _S),
        BrokerConfigDef("ssl.allow.san.changes", _T.BOOLEAN, "false", _S),
        BrokerConfigDef("ssl.cipher.suites", _T.LIST, "", _D),
        BrokerConfigDef("ssl.client.auth", _T.STRING, "none", _D),
        BrokerConfigDef("ssl.enabled.protocols", _T.LIST, "TLSv1.2,TLSv1.3", _D),
        BrokerConfigDef("ssl.endpoint.identification.algorithm", _T.STRING, "https", _D),
        BrokerConfigDef("ssl.engine.factory.class", _T.CLASS, None, _D),
        BrokerConfigDef("ssl.key.password", _T.PASSWORD, None, _D),
        BrokerConfigDef("ssl.keymanager.algorithm", _T.STRING, "SunX509", _D),
        BrokerConfigDef("ssl.keystore.certificate.chain", _T.PASSWORD, None, _D),
        BrokerConfigDef("ssl.keystore.key", _T.PASSWORD, None, _D),
        BrokerConfigDef("ssl.keystore.location", _T.STRING, None, _D),
        BrokerConfigDef("ssl.keystore.password", _T.PASSWORD, None, _D),
        BrokerConfigDef("ssl.keystore.type", _T.STRING, "JKS", _D),
        BrokerConfigDef("ssl.principal.mapping.rules", _T.STRING, "DEFAULT", _S),
        BrokerConfigDef("ssl.protocol", _T.STRING, "TLSv1.3", _D),
        BrokerConfigDef("ssl.provider", _T.STRING, None, _D),
        BrokerConfigDef("ssl.secure.random.implementation", _T.STRING, None, _D),
        BrokerConfigDef("ssl.trustmanager.algorithm", _T.STRING, "PKIX", _D),
        BrokerConfigDef("ssl.truststore.certificates", _T.PASSWORD, None, _D),
        BrokerConfigDef("ssl.truststore.location", _T.STRING, None, _D),
        BrokerConfigDef("ssl.truststore.password", _T.PASSWORD, None, _D),
        BrokerConfigDef("ssl.truststore.type", _T.STRING, "JKS", _D),
        BrokerConfigDef("telemetry.max.bytes", _T.INT, "1048576", _S),
        BrokerConfigDef(
            "transaction.abort.timed.out.transaction.cleanup.interval.ms",
            _T.INT,
            "10000",
            _S,
        ),
        BrokerConfigDef("transaction.max.timeout.ms", _T.INT, "900000", _S),
        BrokerConfigDef("transaction.partition.verification.enable", _T.BOOLEAN, "true", _D),
        BrokerConfigDef(
            "transaction.remove.expired.transaction.cleanup.interval.ms",
            _T.INT,
            "3600000",
            _S,
        ),
        BrokerConfigDef("transaction.state.log.load.buffer.size", _T.INT, "5242880", _S),
        BrokerConfigDef("transaction.state.log.min.isr", _T.INT, "2", _S),
        BrokerConfigDef("transaction.state.log.num.partitions", _T.INT, "50", _S),
        BrokerConfigDef("transaction.state.log.replication.factor", _T.SHORT, "3", _S),
        BrokerConfigDef("transaction.state.log.segment.bytes", _T.INT, "104857600", _S),
        BrokerConfigDef("transactional.id.expiration.ms", _T.INT, "604800000", _S),
        BrokerConfigDef("unclean.leader.election.enable", _T.BOOLEAN, "false", _D),
    )
}
# fmt: on
