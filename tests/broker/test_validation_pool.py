"""broker.produce.validation_pool and broker.produce.validation_worker: real worker
processes, no broker.

What a worker answers must be exactly what storage.batch_checks answers in the broker
process (the pool only moves the work); a worker that dies fails its jobs with WorkerLost
(never a hang) and is replaced; closing the pool leaves no process behind.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time

import pytest

from broker.produce import validation_worker as wire
from broker.produce.validation_pool import ValidationPool, WorkerLost, default_count
from protocol.compression import GZIP
from protocol.errors import ErrorCode
from protocol.records import HEADER_SIZE, Record, build_batch
from storage.batch_checks import BatchJob, CheckedBatch, check_batch
from storage.record_rules import TopicRules

NOW = int(time.time() * 1000)
RULES = TopicRules("t-0", False, False, 2**62, 2**62)
LOG_APPEND = TopicRules("t-0", False, True, 2**62, 2**62)
COMPACT = TopicRules("c-0", True, False, 2**62, 2**62)


def job(records: bytes, rules: TopicRules = RULES) -> BatchJob:
    return BatchJob(records, 1_048_588, True, "records", rules, NOW)


def batch(count: int = 300, **kw: object) -> bytes:
    records = [(None, f"v{i}".encode()) for i in range(count)]
    return build_batch(records, producer_id=7, producer_epoch=0, base_sequence=0, **kw)  # type: ignore[arg-type]


def irregular_compressed() -> bytes:
    # Offset deltas 0, 2, 2 (last_offset_delta 2, three records): a compressed batch Kafka
    # accepts and rebuilds with deltas 0, 1, 2.
    records = [Record(d, 0, b"k", b"v", ()) for d in (0, 2, 2)]
    data = bytearray(build_batch(records, codec=GZIP))
    return bytes(data)


def cases() -> list[BatchJob]:
    good = batch()
    bad_crc = bytearray(good)
    bad_crc[HEADER_SIZE + 5] ^= 1
    return [
        job(good),
        job(good, LOG_APPEND),  # rewritten header: LogAppendTime, max timestamp, CRC
        job(batch(5), COMPACT),  # keyless records on a compacted topic: record errors
        job(bytes(bad_crc)),
        job(good[:40]),  # request-level: no whole batch
        job(irregular_compressed()),
    ]


def same(a: CheckedBatch, b: CheckedBatch) -> None:
    assert a.checked.error == b.checked.error
    assert a.checked.request_level == b.checked.request_level
    assert a.checked.message == b.checked.message
    assert (a.verdict is None) == (b.verdict is None)
    if a.verdict is not None and b.verdict is not None:
        assert (a.verdict.error, a.verdict.message, a.verdict.record_errors) == (
            b.verdict.error,
            b.verdict.message,
            b.verdict.record_errors,
        )
    assert a.batch == b.batch
    assert a.header == b.header
    if a.checked.ok:
        assert a.checked.size == b.checked.size


def test_a_job_frame_decodes_to_the_same_jobs() -> None:
    jobs = cases()
    frame = b"".join(bytes(p) for p in wire.encode_job(42, jobs))
    (length,) = wire.LENGTH.unpack_from(frame)
    assert length == len(frame) - wire.LENGTH.size
    job_id, decoded = wire.decode_job(memoryview(frame)[wire.LENGTH.size :])
    assert job_id == 42
    assert [(bytes(j.records), j.rules, j.depth, j.now_ms) for j in decoded] == [
        (bytes(j.records), j.rules, j.depth, j.now_ms) for j in jobs
    ]


def test_default_worker_count_leaves_a_core_to_the_loop() -> None:
    assert [default_count(n) for n in (None, 1, 2, 8)] == [1, 1, 1, 7]


def test_workers_answer_exactly_what_the_broker_process_would() -> None:
    jobs = cases()  # once: build_batch stamps the clock

    async def scenario() -> list[CheckedBatch]:
        pool = ValidationPool(2)
        try:
            await pool.start(timeout_s=30)
            assert pool.ready_workers() == 2
            futures = [pool.submit([j]) for j in jobs]
            assert all(f is not None for f in futures)
            results = await asyncio.gather(*[f for f in futures if f is not None])
            return [r for rs in results for r in rs]
        finally:
            pool.close()

    results = asyncio.run(scenario())
    expected = [check_batch(j) for j in jobs]
    assert len(results) == len(expected)
    for got, want in zip(results, expected, strict=True):
        same(got, want)
    errors = [r.checked.error for r in results]
    assert errors[3] == ErrorCode.CORRUPT_MESSAGE and results[4].checked.request_level
    assert results[5].rebuilt and results[2].verdict is not None
    assert results[2].verdict.error == ErrorCode.INVALID_RECORD


def test_no_worker_ready_means_the_caller_checks_itself() -> None:
    async def scenario() -> None:
        assert ValidationPool(0).submit([job(batch())]) is None
        pool = ValidationPool(1)
        try:
            # The first job starts the worker but does not wait for it.
            assert pool.submit([job(batch())]) is None
            assert pool.started == 1
        finally:
            pool.close()

    asyncio.run(scenario())


def test_a_killed_worker_fails_its_jobs_and_is_replaced() -> None:
    async def scenario() -> tuple[int, int]:
        pool = ValidationPool(1)
        try:
            await pool.start(timeout_s=30)
            (worker,) = pool._workers
            assert worker.proc is not None
            first = worker.proc.pid
            big = job(batch(50_000))
            future = pool.submit([big])
            assert future is not None
            os.kill(first, signal.SIGKILL)
            try:
                await asyncio.wait_for(future, 30)
                lost = False
            except WorkerLost:
                lost = True
            # Either it answered before the kill landed or it failed: never a hang.
            assert lost or future.done()
            deadline = time.monotonic() + 30
            while not worker.dead:
                assert time.monotonic() < deadline, "the dead worker was never noticed"
                await asyncio.sleep(0.01)
            await pool.start(timeout_s=30)  # replaces the dead worker
            (replacement,) = pool._workers
            assert replacement.proc is not None and replacement.ready
            again = pool.submit([job(batch())])
            assert again is not None
            (result,) = await asyncio.wait_for(again, 30)
            assert result.checked.ok
            return first, replacement.proc.pid
        finally:
            pool.close()

    first, second = asyncio.run(scenario())
    assert first != second


def test_close_stops_every_worker() -> None:
    async def scenario() -> list[int]:
        pool = ValidationPool(2)
        await pool.start(timeout_s=30)
        pids = [w.proc.pid for w in pool._workers if w.proc is not None]
        pool.close()
        return pids

    pids = asyncio.run(scenario())
    assert len(pids) == 2
    for pid in pids:
        # Reaped by close(): the pid is no child of ours any more.
        try:
            os.waitpid(pid, os.WNOHANG)
            raise AssertionError(f"worker {pid} still a child")
        except ChildProcessError:
            pass


def test_batches_travel_in_shared_slots_which_come_back_when_released() -> None:
    async def scenario() -> None:
        pool = ValidationPool(1)
        try:
            await pool.start(timeout_s=30)
            free = len(pool._free_slots)
            assert free > 0
            good = job(batch())
            future = pool.submit([good, good])
            assert future is not None
            assert len(pool._free_slots) == free - 2
            results = await asyncio.wait_for(future, 30)
            assert all(r.slot >= 0 and isinstance(r.batch, memoryview) for r in results)
            assert bytes(results[0].batch or b"") == bytes(check_batch(good).batch or b"")
            pool.release(results)
            pool.release(results)  # twice: no slot is freed twice
            assert len(pool._free_slots) == free
            # Bigger than a slot: in the frame, answered as before.
            huge = BatchJob(_huge(), 4 << 20, True, "records", RULES, NOW)
            sent = pool.submit([huge])
            assert sent is not None
            (result,) = await asyncio.wait_for(sent, 30)
            assert result.slot == -1 and result.checked.ok
            # A refused batch gives its slot back at once.
            bad = bytearray(batch())
            bad[HEADER_SIZE + 3] ^= 1
            sent = pool.submit([job(bytes(bad))])
            assert sent is not None
            (refused,) = await asyncio.wait_for(sent, 30)
            assert refused.checked.error == ErrorCode.CORRUPT_MESSAGE
            assert len(pool._free_slots) == free
        finally:
            pool.close()

    asyncio.run(scenario())


def _huge() -> bytes:
    return build_batch(
        [(None, b"x" * (wire.SLOT_BYTES + 10))], producer_id=7, producer_epoch=0, base_sequence=0
    )


def test_a_worker_that_cannot_start_is_not_started_again_at_every_job(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "executable", "/bin/false")

    async def scenario() -> ValidationPool:
        pool = ValidationPool(1)
        started = time.monotonic()
        await pool.start(timeout_s=20)
        assert time.monotonic() - started < 10
        assert pool.ready_workers() == 0
        for _ in range(5):
            assert pool.submit([job(batch(5))]) is None
        pool.close()
        return pool

    assert asyncio.run(scenario()).started == 1
