"""minikafka.Broker (on the caller's loop) and ThreadedBroker: real sockets on a free port,
a temporary data directory removed at the end, a crash and restart on the same port."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import minikafka
from broker.config.model import ConfigError
from protocol.messages.api_versions import API_VERSIONS
from storage.dir_lock import DataDirLockedError
from tests.support.in_process_broker import in_process_broker
from tests.support.produce import (
    batch,
    create_topic,
    init_producer,
    produce,
    stored,
    stored_values,
)
from tests.support.raw_client import SOFTWARE, RawClient


def test_async_broker_serves_on_the_callers_loop_and_removes_its_data_dir() -> None:
    async def scenario() -> Path:
        async with minikafka.Broker() as broker:
            assert broker.data_dir is not None
            data_dir = broker.data_dir
            assert broker.bootstrap == f"127.0.0.1:{broker.port}"

            def talk() -> int:
                with RawClient(broker.port) as client:
                    return int(client.request(API_VERSIONS, 3, SOFTWARE).error_code)

            assert await asyncio.to_thread(talk) == 0
            assert (data_dir / "meta.properties").exists()
        return data_dir

    assert not asyncio.run(scenario()).exists()


def test_threaded_broker_crash_restart_keeps_the_port_and_the_acknowledged_data(
    tmp_path: Path,
) -> None:
    with minikafka.ThreadedBroker(tmp_path, num_partitions=1) as broker:
        port = broker.port
        with RawClient(port) as client:
            create_topic(client, "kept")
            pid = init_producer(client)
            assert produce(client, "kept", batch(pid, 0, 0)).error_code == 0
        assert broker.crash_restart()["restarts"] == 1
        assert broker.port == port
        with RawClient(port) as client:
            # Producer state recovered from the log: the retry is a duplicate.
            assert produce(client, "kept", batch(pid, 0, 0)).base_offset == 0
    assert [h.base_sequence for h, _ in stored(tmp_path, "kept")] == [0]
    assert (tmp_path / "meta.properties").exists()  # a directory given is kept


def test_a_crash_leaves_no_clean_shutdown_marker(tmp_path: Path) -> None:
    with minikafka.ThreadedBroker(tmp_path) as broker:
        broker.crash()
        assert not (tmp_path / ".kafka_cleanshutdown").exists()
        broker.restart()
    assert (tmp_path / ".kafka_cleanshutdown").exists()


def test_embedded_brokers_start_no_worker_processes_unless_asked() -> None:
    async def scenario() -> tuple[int, int, list[int]]:
        async with minikafka.Broker() as plain:
            assert plain._host is not None and plain._host.broker is not None
            assert plain._host.broker.state is not None
            default = plain._host.broker.state.validation_pool.count
        async with minikafka.Broker(
            minikafka_validation_workers=1, minikafka_validation_workers_eager=True
        ) as broker:
            assert broker._host is not None and broker._host.broker is not None
            state = broker._host.broker.state
            assert state is not None
            pool = state.validation_pool

            def big_produce() -> int:
                with RawClient(broker.port) as client:
                    create_topic(client, "w")
                    pid = init_producer(client)
                    return produce(client, "w", batch(pid, 0, 0, count=400)).error_code

            assert await asyncio.to_thread(big_produce) == 0
            pids = [w.proc.pid for w in pool._workers if w.proc is not None]
            return default, pool.ready_workers(), pids

    default, ready, pids = asyncio.run(scenario())
    assert (default, ready, len(pids)) == (0, 1, 1)
    # Stopping the broker stopped and reaped its worker.
    assert not Path(f"/proc/{pids[0]}").exists()


def test_two_in_process_brokers_on_one_data_dir_the_second_is_refused(tmp_path: Path) -> None:
    with minikafka.ThreadedBroker(tmp_path, num_partitions=1) as first:
        with RawClient(first.port) as client:
            create_topic(client, "one")
            assert produce(client, "one", batch(-1, -1, -1, tag="first")).base_offset == 0
        with pytest.raises(DataDirLockedError, match=r"Failed to acquire lock on file \.lock"):
            minikafka.ThreadedBroker(tmp_path).start()

        async def on_a_loop() -> None:
            await minikafka.Broker(tmp_path).start()

        with pytest.raises(DataDirLockedError):
            asyncio.run(on_a_loop())
        with pytest.raises(DataDirLockedError), in_process_broker(tmp_path):
            pass
        # A crash (as SIGKILL) lets the lock go and the restart takes it again.
        first.crash_restart()
        with pytest.raises(DataDirLockedError):
            minikafka.ThreadedBroker(tmp_path).start()
        with RawClient(first.port) as client:
            assert produce(client, "one", batch(-1, -1, -1, tag="again")).base_offset == 2
    # Stopped: the lock is free for the next broker in this same process.
    with in_process_broker(tmp_path), minikafka.ThreadedBroker(tmp_path / "other"):
        pass
    with minikafka.ThreadedBroker(tmp_path) as again, RawClient(again.port) as client:
        assert produce(client, "one", batch(-1, -1, -1, tag="last")).base_offset == 4
    assert stored_values(tmp_path, "one") == [
        b"first--1",
        b"first-0",
        b"again--1",
        b"again-0",
        b"last--1",
        b"last-0",
    ]


def test_a_misspelt_property_is_refused_with_the_closest_name() -> None:
    with pytest.raises(ConfigError) as refused:
        minikafka.ThreadedBroker(num_partition=3)
    assert str(refused.value) == (
        "unknown broker property 'num.partition' (keyword argument num_partition=3): "
        "did you mean num_partitions?"
    )
    with pytest.raises(ConfigError, match=r"'compresion\.type' \(in config=\): did you mean "):
        minikafka.Broker(config={"compresion.type": "lz4"})
    with pytest.raises(ConfigError, match=r"did you mean port\?"):
        minikafka.Broker(prot=9092)


def test_an_invalid_value_names_the_keyword_argument() -> None:
    with pytest.raises(ConfigError) as refused:
        minikafka.ThreadedBroker(num_partitions="three").start()
    assert str(refused.value) == (
        "invalid value for num.partitions: 'three' is not an integer "
        "(from keyword argument num_partitions='three')"
    )
