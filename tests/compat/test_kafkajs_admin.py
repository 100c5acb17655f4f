"""kafkajs 2.2's admin client: topics with configs, cluster, groups, each checked on the broker.

tests/compat/js/admin.js runs a plan of kafkajs calls (admin methods, producer sends, group
consumers) and prints one JSON result per step. What kafkajs reports is only half of each
check: the other half is what the broker then does or stores, seen without kafkajs — the
segment files, the data directory (partition directories, topic-configs/, meta.properties,
__consumer_offsets) and raw Produce/Fetch requests sent straight to the broker.
"""

from __future__ import annotations

import base64
import json
import subprocess
import time
from pathlib import Path
from typing import Any

from protocol.errors import ErrorCode
from protocol.records import build_batch, decode_records
from protocol.schema import Message
from storage.broker_config_store import BrokerConfigStore
from storage.topic_config_store import DIR_NAME, decode
from tests.compat.conftest import JS_DIR, PARTITIONS, record_versions, require_tool
from tests.support.broker_process import BrokerProcess
from tests.support.capture_proxy import CaptureProxy
from tests.support.produce import fetch_partition, produce, stored
from tests.support.raw_client import RawClient
from tests.support.stored_groups import stored_groups

# admin.js gives itself 60 s; this only catches a node process that ignores its deadline.
NODE_TIMEOUT_S = 90
# kafkajs's ConfigResourceTypes.
TOPIC, BROKER = 2, 4
# kafkajs's ConfigSource (DescribeConfigs v1+ config_source).
TOPIC_CONFIG, DEFAULT_CONFIG = 1, 5


def step(op: str, *args: Any) -> dict[str, Any]:
    return {"op": op, "args": list(args)}


def run_admin(proxy: CaptureProxy, tool: str, plan: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Run the plan in one node process; one result line per step, in plan order."""
    node = require_tool("node", "nodejs")
    if not (JS_DIR / "node_modules" / "kafkajs").is_dir():
        raise AssertionError("kafkajs not installed in tests/compat/js: run `make compat`")
    try:
        done = subprocess.run(
            [node, str(JS_DIR / "admin.js"), proxy.bootstrap],
            input=json.dumps(plan),
            capture_output=True,
            text=True,
            timeout=NODE_TIMEOUT_S,
        )
    finally:
        record_versions(tool, proxy.take())
    assert done.returncode == 0, f"admin.js exited {done.returncode}:\n{done.stderr}"
    results = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["op"] for r in results] == [s["op"] for s in plan], done.stdout
    return results


def ok(result: dict[str, Any]) -> Any:
    assert "ok" in result, result
    return result["ok"]


def error_type(result: dict[str, Any]) -> str:
    """The one broker error kafkajs surfaced, looking through its wrappers: retry causes,
    aggregate errors (CreateTopics) and per-partition or per-group lists."""
    assert "error" in result, result
    error = result["error"]
    while error.get("type") is None:
        if error.get("cause"):
            error = error["cause"]
            continue
        [nested] = error.get("errors") or error.get("partitions") or error.get("groups")
        error = nested.get("error", nested)
    kind: str = error["type"]
    return kind


def configs_of(described: dict[str, Any]) -> dict[str, tuple[str, int]]:
    [resource] = described["resources"]
    assert resource["errorCode"] == 0, resource
    return {
        c["configName"]: (c["configValue"], c["configSource"]) for c in resource["configEntries"]
    }


def stored_topic_configs(data_dir: Path) -> dict[str, dict[str, str]]:
    """topic name -> overrides, decoded from the broker's topic-configs/ files."""
    out: dict[str, dict[str, str]] = {}
    for file in (data_dir / DIR_NAME).iterdir():
        name, configs = decode(file.read_bytes())
        out[name] = configs
    return out


def meta_properties(data_dir: Path) -> dict[str, str]:
    lines = (data_dir / "meta.properties").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line and not line.startswith("#"))


def fetch(client: RawClient, topic: str, partition: int, offset: int) -> Message:
    return fetch_partition(client, topic, offset, partition)


def stored_values(data_dir: Path, topic: str, partition: int) -> list[tuple[int, bytes | None]]:
    return [
        (header.base_offset + r.offset_delta, r.value)
        for header, data in stored(data_dir, topic, partition)
        for r in decode_records(data, header)
    ]


def test_kafkajs_creates_describes_and_alters_topic_configs(
    proxied_broker: tuple[BrokerProcess, CaptureProxy],
) -> None:
    broker, proxy = proxied_broker
    meta = meta_properties(broker.data_dir)
    node_id = meta["node.id"]
    limited, stamped = "kjs-limited", "kjs-stamped"
    big, huge = "b" * 3000, "h" * 5000
    topic_resource = {"type": TOPIC, "name": limited}
    describe_limited = step(
        "describeConfigs",
        {
            "resources": [{**topic_resource, "configNames": ["max.message.bytes", "retention.ms"]}],
            "includeSynonyms": False,
        },
    )
    started_ms = int(time.time() * 1000)
    plan = [
        step(
            "createTopics",
            {
                "topics": [
                    {
                        "topic": limited,
                        "numPartitions": 2,
                        "configEntries": [
                            {"name": "max.message.bytes", "value": "4096"},
                            {"name": "retention.ms", "value": "3600000"},
                        ],
                    },
                    {
                        "topic": stamped,
                        "configEntries": [
                            {"name": "message.timestamp.type", "value": "LogAppendTime"}
                        ],
                    },
                ]
            },
        ),
        # kafkajs answers false (not an error) when every topic already exists.
        step("createTopics", {"topics": [{"topic": limited, "numPartitions": 5}]}),
        # waitForLeaders would send Metadata, which auto-creates the topic kafkajs asks about.
        step(
            "createTopics",
            {"topics": [{"topic": "kjs-dry-run"}], "validateOnly": True, "waitForLeaders": False},
        ),
        step(
            "createTopics",
            {
                "topics": [
                    {"topic": "kjs-bad", "configEntries": [{"name": "no.such", "value": "1"}]}
                ]
            },
        ),
        describe_limited,
        step(
            "describeConfigs",
            {
                "resources": [
                    {"type": BROKER, "name": node_id, "configNames": ["message.max.bytes"]}
                ],
                "includeSynonyms": False,
            },
        ),
        step("describeCluster"),
        step("send", {"topic": limited, "messages": [{"partition": 0, "value": huge}]}),
        step("send", {"topic": limited, "messages": [{"partition": 0, "value": big}]}),
        # AlterConfigs replaces the topic's whole set of overrides: retention.ms goes back.
        step(
            "alterConfigs",
            {
                "resources": [
                    {
                        **topic_resource,
                        "configEntries": [{"name": "max.message.bytes", "value": "1024"}],
                    }
                ]
            },
        ),
        step("send", {"topic": limited, "messages": [{"partition": 0, "value": big}]}),
        describe_limited,
        step(
            "alterConfigs",
            {
                "resources": [
                    {**topic_resource, "configEntries": [{"name": "no.such", "value": "1"}]}
                ]
            },
        ),
        step(
            "alterConfigs",
            {
                "resources": [
                    {
                        "type": BROKER,
                        "name": node_id,
                        "configEntries": [{"name": "message.max.bytes", "value": "10"}],
                    }
                ]
            },
        ),
        # A producer timestamp of 1000 that the LogAppendTime topic must replace.
        step(
            "send",
            {
                "topic": stamped,
                "messages": [
                    {"partition": 0, "value": f"v{i}", "timestamp": "1000"} for i in range(3)
                ],
            },
        ),
        step("consume", {"topic": stamped, "groupId": "kjs-stamp-reader", "count": 3}),
        step("listTopics"),
    ]
    (
        created,
        again,
        dry,
        bad,
        described,
        broker_described,
        cluster,
        too_large,
        fits,
        altered,
        now_too_large,
        described_after,
        bad_alter,
        broker_alter,
        stamped_send,
        consumed,
        listed,
    ) = run_admin(proxy, "kafkajs admin (configs)", plan)
    finished_ms = int(time.time() * 1000)
    data = broker.data_dir

    # CreateTopics: the partitions exist on disk with the overrides stored; validateOnly and
    # a refused config created nothing.
    assert ok(created) is True and ok(again) is False and ok(dry) is True
    assert error_type(bad) == "INVALID_CONFIG"
    # kafkajs sends numPartitions -1 when not given, even at CreateTopics v3; Kafka reads
    # it as "the broker's num.partitions" at every version (3 here).
    assert sorted(p.name for p in data.glob("kjs-*")) == [
        "kjs-limited-0",
        "kjs-limited-1",
        *(f"kjs-stamped-{p}" for p in range(PARTITIONS)),
    ]
    # kafkajs lists every topic Metadata names, internal ones included (as against Kafka, where
    # __consumer_offsets exists once a group has used it; other tests' groups here made it).
    assert sorted(t for t in ok(listed) if not t.startswith("__")) == [limited, stamped]

    # DescribeConfigs before and after AlterConfigs, against what topic-configs/ now holds.
    assert configs_of(ok(described)) == {
        "max.message.bytes": ("4096", TOPIC_CONFIG),
        "retention.ms": ("3600000", TOPIC_CONFIG),
    }
    assert ok(altered)["resources"][0]["errorCode"] == 0
    assert configs_of(ok(described_after)) == {
        "max.message.bytes": ("1024", TOPIC_CONFIG),
        "retention.ms": ("604800000", DEFAULT_CONFIG),
    }
    assert error_type(bad_alter) == "INVALID_CONFIG"
    # message.max.bytes is a dynamic broker config: Kafka accepts it per broker and stores it
    # (read back from broker-configs/, where the broker keeps dynamic broker configs).
    assert ok(broker_alter)["resources"][0]["errorCode"] == 0
    assert BrokerConfigStore.open(data).get(node_id) == {"message.max.bytes": "10"}
    # (__consumer_offsets, made by other tests' groups, keeps Kafka's configs for it there.)
    assert {k: v for k, v in stored_topic_configs(data).items() if not k.startswith("__")} == {
        limited: {"max.message.bytes": "1024"},
        stamped: {"message.timestamp.type": "LogAppendTime"},
    }
    assert configs_of(ok(broker_described)) == {"message.max.bytes": ("1048588", DEFAULT_CONFIG)}

    # DescribeCluster (kafkajs reads it from Metadata): the stored cluster id, this broker at
    # the address it advertises, which is the proxy's.
    assert ok(cluster) == {
        "brokers": [{"nodeId": int(node_id), "host": "127.0.0.1", "port": proxy.port}],
        "controller": int(node_id),
        "clusterId": meta["cluster.id"],
    }

    # max.message.bytes: 5000 > 4096 refused, 3000 stored, then 3000 > 1024 refused; the
    # segment files hold only the one accepted record, and the broker still refuses it raw.
    assert error_type(too_large) == "MESSAGE_TOO_LARGE"
    assert ok(fits)[0]["errorCode"] == 0
    assert error_type(now_too_large) == "MESSAGE_TOO_LARGE"
    assert stored_values(data, limited, 0) == [(0, big.encode())]
    with RawClient(broker.port) as client:
        raw_big = build_batch([(None, big.encode())])
        assert produce(client, limited, raw_big).error_code == ErrorCode.MESSAGE_TOO_LARGE
        assert produce(client, limited, build_batch([(None, b"small")])).base_offset == 1

    # LogAppendTime: kafkajs got the broker's time back, the stored batch carries it as its
    # max timestamp with the LogAppendTime attribute, and the consumer saw it on every record.
    [meta_stamped] = ok(stamped_send)
    append_time = int(meta_stamped["logAppendTime"])
    assert started_ms <= append_time <= finished_ms
    [(header, _)] = stored(data, stamped, 0)
    assert header.log_append_time and header.max_timestamp == append_time
    assert [(m["offset"], m["timestamp"]) for m in ok(consumed)] == [
        (i, append_time) for i in range(3)
    ]


def test_kafkajs_grows_trims_and_deletes_a_topic(
    proxied_broker: tuple[BrokerProcess, CaptureProxy],
) -> None:
    broker, proxy = proxied_broker
    topic = "kjs-grow"
    data = broker.data_dir
    plan = [
        step(
            "createTopics",
            {
                "topics": [
                    {
                        "topic": topic,
                        "numPartitions": 1,
                        "configEntries": [{"name": "max.message.bytes", "value": "2048"}],
                    }
                ]
            },
        ),
        # One record per send: ten single-record batches at offsets 0-9.
        *[
            step("send", {"topic": topic, "messages": [{"partition": 0, "value": f"r{i}"}]})
            for i in range(10)
        ],
        step("createPartitions", {"topicPartitions": [{"topic": topic, "count": 3}]}),
        step("createPartitions", {"topicPartitions": [{"topic": topic, "count": 2}]}),
    ]
    created, *sends, grown, shrink = run_admin(proxy, "kafkajs admin (topics)", plan)
    assert ok(created) is True
    assert [ok(s)[0]["baseOffset"] for s in sends] == [str(i) for i in range(10)]

    # CreatePartitions: three partition directories; shrinking refused.
    assert ok(grown) is None
    assert error_type(shrink) == "INVALID_PARTITIONS"
    assert sorted(p.name for p in data.glob(f"{topic}-*")) == [f"{topic}-{p}" for p in range(3)]

    # A fresh process: kafkajs's producer drops, without an error, messages for a partition
    # its cached metadata does not know yet.
    plan = [
        step("fetchTopicMetadata", {"topics": [topic]}),
        step(
            "send",
            {"topic": topic, "messages": [{"partition": 2, "value": f"p2-{i}"} for i in range(3)]},
        ),
        # New partitions inherit the topic's configs.
        step("send", {"topic": topic, "messages": [{"partition": 1, "value": "x" * 3000}]}),
        step(
            "deleteTopicRecords",
            {"topic": topic, "partitions": [{"partition": 0, "offset": "4"}]},
        ),
        # -1 deletes everything up to the high watermark.
        step(
            "deleteTopicRecords",
            {"topic": topic, "partitions": [{"partition": 2, "offset": "-1"}]},
        ),
        step(
            "deleteTopicRecords",
            {"topic": topic, "partitions": [{"partition": 0, "offset": "50"}]},
        ),
        step("fetchTopicOffsets", topic),
    ]
    results = run_admin(proxy, "kafkajs admin (topics)", plan)
    metadata, p2_send, p1_too_large, trimmed, emptied, beyond, offsets = results
    [described] = ok(metadata)["topics"]
    assert sorted(p["partitionId"] for p in described["partitions"]) == [0, 1, 2]
    assert ok(p2_send)[0]["baseOffset"] == "0"
    assert [v for _, v in stored_values(data, topic, 2)] == [b"p2-%d" % i for i in range(3)]
    assert error_type(p1_too_large) == "MESSAGE_TOO_LARGE"
    assert stored(data, topic, 1) == []

    # DeleteRecords: kafkajs sees the new low watermarks; an offset above the high
    # watermark is refused.
    assert ok(trimmed) is None and ok(emptied) is None
    assert error_type(beyond) == "OFFSET_OUT_OF_RANGE"
    assert sorted((o["partition"], o["low"], o["high"]) for o in ok(offsets)) == [
        (0, "4", "10"),
        (1, "0", "0"),
        (2, "3", "3"),
    ]

    with RawClient(broker.port) as client:
        # Below the new start a fetch is out of range; at it, the first record is offset 4.
        assert fetch(client, topic, 0, 3).error_code == ErrorCode.OFFSET_OUT_OF_RANGE
        at_start = fetch(client, topic, 0, 4)
        assert (at_start.error_code, at_start.log_start_offset) == (0, 4)
        assert at_start.high_watermark == 10
        assert fetch(client, topic, 2, 0).error_code == ErrorCode.OFFSET_OUT_OF_RANGE
        assert fetch(client, topic, 2, 3).log_start_offset == 3
        # The partition that inherited max.message.bytes=2048 still refuses 3000 bytes.
        raw_big = build_batch([(None, b"x" * 3000)])
        assert produce(client, topic, raw_big, partition=1).error_code == (
            ErrorCode.MESSAGE_TOO_LARGE
        )
    checkpoint = (data / "log-start-offset-checkpoint").read_text()
    assert f"{topic} 0 4" in checkpoint and f"{topic} 2 3" in checkpoint, checkpoint
    assert stored_topic_configs(data) == {topic: {"max.message.bytes": "2048"}}

    # DeleteTopics in a fresh kafkajs process (a producer that knows the topic would
    # refresh its metadata and so re-create it).
    deleted, listed, again = run_admin(
        proxy,
        "kafkajs admin (topics)",
        [
            step("deleteTopics", {"topics": [topic]}),
            step("listTopics"),
            step("deleteTopics", {"topics": [topic]}),
        ],
    )
    assert ok(deleted) is None and ok(listed) == []
    assert error_type(again) == "UNKNOWN_TOPIC_OR_PARTITION"
    # As Kafka, the partition directories are renamed *-delete at once and removed after
    # log.segment.delete.delay.ms; no live partition directory is left.
    left = sorted(p.name for p in data.glob(f"{topic}-*"))
    assert len(left) == 3 and all(name.endswith("-delete") for name in left), left
    assert stored_topic_configs(data) == {}
    assert topic not in (data / "log-start-offset-checkpoint").read_text()
    with RawClient(broker.port) as client:
        refused = produce(client, topic, build_batch([(None, b"v")]))
        assert refused.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_kafkajs_lists_describes_and_deletes_a_group(
    proxied_broker: tuple[BrokerProcess, CaptureProxy],
) -> None:
    broker, proxy = proxied_broker
    topic, group = "kjs-grouped", "kjs-admin-group"
    n = 30
    describe = step("describeGroups", [group])
    list_groups = step("listGroups")
    fetch_offsets = step("fetchOffsets", {"groupId": group, "topics": [topic]})
    plan = [
        step("createTopics", {"topics": [{"topic": topic, "numPartitions": 3}]}),
        step(
            "send",
            {"topic": topic, "messages": [{"key": f"k{i}", "value": f"v{i}"} for i in range(n)]},
        ),
        step("consume", {"topic": topic, "groupId": group, "count": n, "hold": True}),
        list_groups,
        describe,
        step("deleteGroups", [group]),
        step("stopConsumer", {"groupId": group}),
        describe,
        fetch_offsets,
        step("deleteGroups", [group]),
        describe,
        list_groups,
        fetch_offsets,
        step("deleteGroups", [group]),
    ]
    (
        _,
        sent,
        consumed,
        listed_active,
        active,
        delete_active,
        _,
        empty,
        committed,
        deleted,
        dead,
        listed_after,
        committed_after,
        delete_again,
    ) = run_admin(proxy, "kafkajs admin (groups)", plan)
    assert all(m["errorCode"] == 0 for m in ok(sent))
    ends = {p: len(stored_values(broker.data_dir, topic, p)) for p in range(3)}
    assert sum(ends.values()) == n and len(ok(consumed)) == n

    # While the member is in the group: listed, Stable, assigned all three partitions.
    assert {"groupId": group, "protocolType": "consumer"} in ok(listed_active)["groups"]
    [stable] = ok(active)["groups"]
    assert (stable["groupId"], stable["state"], stable["protocolType"]) == (
        group,
        "Stable",
        "consumer",
    )
    [member] = stable["members"]
    assert member["clientId"] == "compat-kafkajs-admin"
    assert member["assignment"] == {topic: [0, 1, 2]}
    assert base64.b64decode(member["memberAssignment"])  # the SyncGroup bytes, kept as given
    assert error_type(delete_active) == "NON_EMPTY_GROUP"

    # After the member leaves: Empty, and the offsets it committed are the partition ends.
    [emptied] = ok(empty)["groups"]
    assert (emptied["state"], emptied["members"]) == ("Empty", [])
    [offsets] = ok(committed)
    assert {p["partition"]: int(p["offset"]) for p in offsets["partitions"]} == ends

    # DeleteGroups: gone from every view, and its committed offsets with it.
    assert ok(deleted) == [{"groupId": group, "errorCode": 0}]
    [gone] = ok(dead)["groups"]
    assert (gone["state"], gone["members"]) == ("Dead", [])
    assert all(g["groupId"] != group for g in ok(listed_after)["groups"])
    [offsets_after] = ok(committed_after)
    assert {int(p["offset"]) for p in offsets_after["partitions"]} == {-1}
    assert error_type(delete_again) == "GROUP_ID_NOT_FOUND"

    # What the broker stored: after a clean stop the __consumer_offsets topic replays without
    # the group or any of its offsets.
    broker.stop()
    log = stored_groups(broker.data_dir)
    try:
        assert group not in log.groups() and log.offsets(group) == {}
    finally:
        log.close()
