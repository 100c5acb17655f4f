"""Java Admin (kafka-clients 4.4.0) on share groups: listShareGroupOffsets (start offset and
lag), alterShareGroupOffsets, deleteShareGroupOffsets, describeShareGroups and
deleteShareGroups against a broker with share groups on (tests/compat/share/ShareAdmin.java,
compiled with javac against build/java/kafka-4.4.0/lib, which `make compat` fills); what the
broker stored is checked in its share-group files."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from storage import share_group_store, share_state_store
from tests.compat.conftest import require_tool
from tests.compat.test_java_share_consumer import JAVA_TIMEOUT_S, LIB, LOG4J_CONFIG
from tests.e2e.test_share_groups_raw import (
    ACCEPT,
    fetch_until,
    heartbeat,
    produce_values,
    share_ack,
    share_fetch,
)
from tests.support.broker_process import running
from tests.support.produce import create_partitioned_topic
from tests.support.raw_client import RawClient

SOURCE = Path(__file__).parent / "share" / "ShareAdmin.java"


def run_admin(out: Path, bootstrap: str, *args: str) -> dict[str, Any]:
    if not (LIB / "kafka-clients-4.4.0.jar").exists():
        pytest.fail("kafka-clients 4.4.0 jars missing: run `make compat`")
    subprocess.run(
        [require_tool("javac"), "-d", str(out), "-cp", f"{LIB}/*", str(SOURCE)],
        check=True,
        timeout=JAVA_TIMEOUT_S,
    )
    command = [
        require_tool("java"),
        "-Xmx256m",
        "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1",
        f"-Dlog4j2.configurationFile={LOG4J_CONFIG}",
        "-cp",
        f"{out}:{LIB}/*",
        "ShareAdmin",
        bootstrap,
        *args,
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=JAVA_TIMEOUT_S)
    assert done.returncode == 0, f"ShareAdmin exited {done.returncode}:\n{done.stderr}"
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    return {line["step"]: line["result"] for line in lines}


def test_java_admin_lists_alters_and_deletes_share_group_offsets(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with running(data, {"minikafka.share.version": "1"}) as broker:
        with RawClient(broker.port) as client:
            topic_id = create_partitioned_topic(client, "admin-t", 1)
            assert heartbeat(client, "admin-g", "m1", 0, ["admin-t"]).error_code == 0
            assert share_fetch(client, "admin-g", "m1", 0, topic_id).error_code == 0
            produce_values(client, "admin-t", 6)
            epoch, got = fetch_until(client, "admin-g", "m1", 1, topic_id, 10)
            assert got == [(0, 5, 1)]
            acked = share_ack(client, "admin-g", "m1", epoch, topic_id, [(0, 1, [ACCEPT])])
            assert acked.responses[0].partitions[0].error_code == 0
            assert heartbeat(client, "admin-g", "m1", -1).error_code == 0
        seen = run_admin(tmp_path / "classes", broker.bootstrap, "admin-g", "admin-t", "4")
        assert seen == {
            # Start offset 2 after 0-1 were accepted; 4 records left to deliver.
            "list": {"admin-t-0": [2, 4]},
            "alter": "ok",
            "alter unknown topic": "UnknownTopicOrPartitionException",
            "list after alter": {"admin-t-0": [4, 2]},
            "delete": "ok",
            "list after delete": {},
            "describe": "Empty",
            "delete group": "ok",
            "describe deleted": "GroupIdNotFoundException",
            "delete offsets of deleted": "GroupIdNotFoundException",
        }
        assert not any(k[0] == "admin-g" for k in _states(data))
        assert "admin-g" not in share_group_store.decode(
            (data / share_group_store.FILE_NAME).read_bytes()
        )


def _states(data: Path) -> dict[tuple[str, bytes, int], share_state_store.ShareState]:
    path = data / share_state_store.FILE_NAME
    return share_state_store.decode(path.read_bytes()) if path.exists() else {}
