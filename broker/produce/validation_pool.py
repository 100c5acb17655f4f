"""Worker processes for Produce's per-batch CPU work (issue 19): every core, not one.

The event loop decodes, appends and answers; the record walk, decompression, CRC checks and
rewrites of a batch (storage.batch_checks, a pure function) cost about 1.3 us per record
in Python and hold the GIL, so threads cannot share them out. ``minikafka.validation.workers``
processes (broker.produce.validation_worker) run them instead, each connected by a Unix socket
pair read by the loop (an asyncio Protocol: no thread in between).

- Started lazily, at the first job, without waiting: until a worker has said it is ready
  ``submit`` answers None and the caller validates as before (on the loop or a thread), so
  broker start-up stays quick and a broker that never sees a big batch never starts one.
- Jobs go to the worker with the fewest jobs outstanding; a worker answers its jobs in
  order. Appends and answers keep their order elsewhere (the produce handler's turns, the
  connection's response queue): results only come back sooner or later.
- A worker that dies (or whose socket breaks) fails its outstanding jobs with WorkerLost
  (the caller validates them again itself: the checks are pure, so that is a plain retry)
  and is replaced at the next job. A job unanswered for JOB_TIMEOUT_S (a stopped worker)
  kills its worker, which then counts as dead. Never a hang.
- Workers die with the broker: ``close`` closes the sockets and reaps them; a broker
  killed with SIGKILL closes the sockets too, and PR_SET_PDEATHSIG ends a busy worker.
"""

from __future__ import annotations

import asyncio
import logging
import mmap
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from broker.produce import validation_worker as wire
from protocol.errors import ErrorCode
from protocol.records import HEADER_SIZE, parse_header
from storage.batch_checks import BatchJob, CheckedBatch
from storage.record_rules import RecordsVerdict
from storage.validation import Validation

log = logging.getLogger(__name__)

# A job unanswered this long means a stuck worker (a 100 MiB compressed batch validates in
# well under a second).
JOB_TIMEOUT_S = 30.0
_SOCKET_BUFFER = 1 << 20
# Slots of the shared area per worker: enough for every connection's pipelined requests
# on a busy broker; a batch finding none free travels in the frame instead.
SLOTS_PER_WORKER = 16
# After a worker died before it was ready, no new one is started for this long.
RESPAWN_BACKOFF_S = 10.0
_ROOT = str(Path(__file__).resolve().parent.parent)


class WorkerLost(Exception):
    """The worker running a job died before answering it."""


def default_count(cpu_count: int | None) -> int:
    """Workers for ``minikafka.validation.workers=-1``: one per core besides the loop's."""
    return max(1, (cpu_count or 1) - 1)


class _Worker(asyncio.Protocol):
    def __init__(self, pool: ValidationPool, number: int) -> None:
        self.pool = pool
        self.number = number
        self.proc: subprocess.Popen[bytes] | None = None
        self.transport: asyncio.Transport | None = None
        self.ready = False
        self.dead = False
        self._buf = bytearray()
        # job id -> (future, the jobs, their slots, when sent), in the order sent.
        self.pending: dict[
            int, tuple[asyncio.Future[list[CheckedBatch]], list[BatchJob], list[int], float]
        ] = {}

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        buf = self._buf
        buf += data
        start = 0
        size = len(buf)
        while size - start >= wire.LENGTH.size:
            (length,) = wire.LENGTH.unpack_from(buf, start)
            end = start + wire.LENGTH.size + length
            if end > size:
                break
            with memoryview(buf) as view:
                self._on_frame(view[start + wire.LENGTH.size : end])
            start = end
        if start:
            del buf[:start]

    def _on_frame(self, body: memoryview) -> None:
        job_id, count, walked = wire.RESULT_BODY_HEAD.unpack_from(body, 0)
        if job_id == wire.READY_JOB:
            self.ready = True
            self.pool._ready_changed.set()
            log.info("validation worker %d (pid %s) ready", self.number, self._pid())
            return
        item = self.pending.pop(job_id, None)
        if item is None:
            return
        future, jobs, slots, _ = item
        pos = wire.RESULT_BODY_HEAD.size
        results = []
        pool = self.pool
        for job, slot in zip(jobs[:count], slots, strict=False):
            kind, length = wire.RESULT_HEAD.unpack_from(body, pos)
            pos += wire.RESULT_HEAD.size
            payload = body[pos : pos + length]
            pos += length
            if kind == wire.PATCHED and slot >= 0:
                results.append(pool._patched_in_slot(payload, slot))
                continue
            pool._free(slot)
            results.append(_result(kind, payload, job))
        pool.completed += 1
        pool.walked_in_workers += walked
        if future.done():
            pool.release(results)  # its request is gone (connection closed)
        else:
            future.set_result(results)

    def connection_lost(self, exc: Exception | None) -> None:
        self.pool._lost(self, exc)

    def _pid(self) -> int | None:
        return None if self.proc is None else self.proc.pid


def _result(kind: int, payload: memoryview, job: BatchJob) -> CheckedBatch:
    if kind == wire.PATCHED:
        (size,) = wire.SIZE.unpack_from(payload, 0)
        batch = bytearray(job.records[:size])
        batch[:HEADER_SIZE] = payload[wire.SIZE.size :]
        return _accepted(batch, size)
    if kind == wire.REBUILT:
        return _accepted(bytearray(payload), len(job.records), rebuilt=True)
    # A refused batch only (imported at the first: the broker needs pickle for nothing else).
    import pickle

    checked, verdict = pickle.loads(payload)
    return CheckedBatch(checked, verdict)


def _accepted(batch: bytearray | memoryview, size: int, rebuilt: bool = False) -> CheckedBatch:
    header = parse_header(batch)
    checked = Validation(ErrorCode.NONE, None, header, size=size)
    return CheckedBatch(checked, RecordsVerdict(ErrorCode.NONE, None), batch, header, rebuilt)


class ValidationPool:
    """``count`` worker processes, started at the first job; 0 = no pool (always None)."""

    def __init__(self, count: int) -> None:
        self.count = count
        self._workers: list[_Worker] = []
        self._next_job = wire.READY_JOB + 1
        self._numbers = iter(range(1, 1 << 62))
        self._closed = False
        self._watchdog: asyncio.TimerHandle | None = None
        self._connecting: set[asyncio.Task[None]] = set()
        self._spawn_after = 0.0
        self._ready_changed = asyncio.Event()
        # The shared area (broker.produce.validation_worker): made with the first worker.
        self._shared_fd = -1
        self._shared: mmap.mmap | None = None
        self._view: memoryview | None = None
        self._free_slots: list[int] = []
        # Jobs answered by workers and jobs that had to be run again (counters for tests
        # and the log).
        self.completed = 0
        self.lost = 0
        self.started = 0
        # Records the record walk covered, as the workers report it and in the broker
        # process (the loop or a thread: no worker ready, one lost, or a small request).
        self.walked_in_workers = 0
        self.walked_here = 0

    @property
    def enabled(self) -> bool:
        return self.count > 0 and not self._closed

    async def start(self, timeout_s: float) -> None:
        """Start every worker now and wait until each is ready (or ``timeout_s`` passed:
        then the broker serves anyway, validating in-process until they are)."""
        if not self.enabled:
            return
        self._ready_changed = asyncio.Event()
        deadline = time.monotonic() + timeout_s
        while True:
            self._replenish()
            if self.ready_workers() >= self.count:
                return
            if time.monotonic() < self._spawn_after and all(w.dead for w in self._workers):
                log.warning("validation workers could not start; checking in the broker")
                return
            left = deadline - time.monotonic()
            if left <= 0:
                log.warning("validation workers not ready after %.0f s", timeout_s)
                return
            self._ready_changed.clear()
            try:
                await asyncio.wait_for(self._ready_changed.wait(), left)
            except TimeoutError:
                continue

    @property
    def has_ready_worker(self) -> bool:
        return any(w.ready and not w.dead for w in self._workers)

    def ready_workers(self) -> int:
        return sum(1 for w in self._workers if w.ready and not w.dead)

    def submit(self, jobs: list[BatchJob]) -> asyncio.Future[list[CheckedBatch]] | None:
        """Send ``jobs`` to a ready worker: a future of their results (or WorkerLost), or
        None when no worker is ready yet (the caller validates them itself)."""
        if not self.enabled:
            return None
        self._replenish()
        best: _Worker | None = None
        for worker in self._workers:
            if (
                worker.ready
                and not worker.dead
                and (best is None or len(worker.pending) < len(best.pending))
            ):
                best = worker
        if best is None or best.transport is None:
            return None
        job_id = self._next_job
        self._next_job = job_id + 1 if job_id < 0xFFFFFFFF else wire.READY_JOB + 1
        future: asyncio.Future[list[CheckedBatch]] = asyncio.get_running_loop().create_future()
        slots = [self._copy_in(job.records) for job in jobs]
        best.pending[job_id] = (future, jobs, slots, time.monotonic())
        best.transport.writelines(wire.encode_job(job_id, jobs, slots))
        self._arm_watchdog()
        return future

    def _copy_in(self, records: memoryview | bytes) -> int:
        """A slot holding a copy of ``records``, or -1 (too big, none free, no area)."""
        view = self._view
        size = len(records)
        if view is None or not self._free_slots or size > wire.SLOT_BYTES:
            return -1
        slot = self._free_slots.pop()
        start = slot * wire.SLOT_BYTES
        view[start : start + size] = records
        return slot

    def _patched_in_slot(self, payload: memoryview, slot: int) -> CheckedBatch:
        (size,) = wire.SIZE.unpack_from(payload, 0)
        assert self._view is not None
        start = slot * wire.SLOT_BYTES
        batch = self._view[start : start + size]
        batch[:HEADER_SIZE] = payload[wire.SIZE.size :]
        result = _accepted(batch, size)
        result.slot = slot
        return result

    def _free(self, slot: int) -> None:
        if slot >= 0 and self._view is not None:
            self._free_slots.append(slot)

    def release(self, results: list[CheckedBatch]) -> None:
        """The caller is done with these batches (appended or dropped): their slots are
        free again. Results from anywhere else (no slot) are ignored."""
        for result in results:
            if result.slot >= 0:
                self._free(result.slot)
                result.slot = -1
                result.batch = None

    def _make_shared(self) -> None:
        if self._shared is not None or not hasattr(os, "memfd_create"):
            return
        slots = SLOTS_PER_WORKER * self.count
        try:
            fd = os.memfd_create("minikafka-validation", 0)
            os.ftruncate(fd, slots * wire.SLOT_BYTES)
            self._shared = mmap.mmap(fd, slots * wire.SLOT_BYTES)
        except OSError as exc:
            log.warning("no shared area for validation workers (batches go by socket): %s", exc)
            return
        self._shared_fd = fd
        self._view = memoryview(self._shared)
        self._free_slots = list(range(slots - 1, -1, -1))

    def _replenish(self) -> None:
        self._make_shared()
        self._workers = [w for w in self._workers if not w.dead]
        if time.monotonic() < self._spawn_after:
            return
        while len(self._workers) < self.count:
            worker = _Worker(self, next(self._numbers))
            self._workers.append(worker)
            try:
                self._spawn(worker)
            except OSError as exc:
                log.warning("validation worker could not start: %s", exc)
                worker.dead = True
                self._workers.remove(worker)
                return

    def _spawn(self, worker: _Worker) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        for end in (ours, theirs):
            end.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, _SOCKET_BUFFER)
            end.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, _SOCKET_BUFFER)
        shared = () if self._shared_fd < 0 else (self._shared_fd,)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_ROOT, env.get("PYTHONPATH")) if p)
        try:
            worker.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "broker.produce.validation_worker",
                    str(theirs.fileno()),
                    str(os.getpid()),
                    *(str(fd) for fd in shared),
                ],
                pass_fds=(theirs.fileno(), *shared),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                env=env,
            )
        except OSError:
            ours.close()
            raise
        finally:
            theirs.close()
        self.started += 1
        task = asyncio.get_running_loop().create_task(self._connect(worker, ours))
        self._connecting.add(task)
        task.add_done_callback(self._connecting.discard)

    async def _connect(self, worker: _Worker, sock: socket.socket) -> None:
        try:
            await asyncio.get_running_loop().connect_accepted_socket(lambda: worker, sock=sock)
        except OSError as exc:
            sock.close()
            self._lost(worker, exc)
            return
        if self._closed and worker.transport is not None:
            worker.transport.abort()

    def _lost(self, worker: _Worker, exc: Exception | None) -> None:
        if worker.dead:
            return
        if not worker.ready and not self._closed:
            # It never got ready (a broken environment?): no new one for a while, rather
            # than one process started per Produce request.
            self._spawn_after = time.monotonic() + RESPAWN_BACKOFF_S
        worker.dead = True
        worker.ready = False
        pending = list(worker.pending.values())
        worker.pending.clear()
        if not self._closed:
            log.warning(
                "validation worker %d (pid %s) is gone (%s); %d job(s) run again",
                worker.number,
                worker._pid(),
                exc or "exited",
                len(pending),
            )
        self.lost += len(pending)
        self._ready_changed.set()
        for _, _, slots, _ in pending:
            for slot in slots:
                self._free(slot)
        for future, _, _, _ in pending:
            if not future.done():
                future.set_exception(WorkerLost(f"validation worker {worker.number} is gone"))
        _reap(worker)

    def _arm_watchdog(self) -> None:
        if self._watchdog is None:
            self._watchdog = asyncio.get_running_loop().call_later(
                JOB_TIMEOUT_S / 4, self._check_stuck
            )

    def _check_stuck(self) -> None:
        self._watchdog = None
        now = time.monotonic()
        busy = False
        for worker in self._workers:
            if worker.dead or not worker.pending:
                continue
            busy = True
            oldest = next(iter(worker.pending.values()))[3]
            if now - oldest > JOB_TIMEOUT_S and worker.proc is not None:
                log.warning(
                    "validation worker %d (pid %s) took over %.0f s on a job: killed",
                    worker.number,
                    worker._pid(),
                    JOB_TIMEOUT_S,
                )
                worker.proc.kill()
                if worker.transport is not None:
                    worker.transport.abort()
        if busy and not self._closed:
            self._arm_watchdog()

    def count_walked_here(self, results: list[CheckedBatch]) -> list[CheckedBatch]:
        """Count the records of ``results``, checked in the broker process."""
        for result in results:
            checked = result.checked
            if checked.scan is not None and checked.header is not None:
                self.walked_here += checked.header.records_count
        return results

    def close(self) -> None:
        """Stop every worker (at shutdown, or a crash of an in-process broker)."""
        if self.count > 0 and not self._closed:
            log.info(
                "validation: %d records walked in worker processes, %d in the broker",
                self.walked_in_workers,
                self.walked_here,
            )
        self._closed = True
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None
        for worker in self._workers:
            if worker.transport is not None:
                worker.transport.abort()
            self._lost(worker, None)
        self._workers = []
        if self._shared_fd >= 0:
            os.close(self._shared_fd)
            self._shared_fd = -1
        # The mapping itself goes with the last view of it (batches still being appended).
        self._view = None
        self._shared = None
        self._free_slots = []


def _reap(worker: _Worker) -> None:
    proc = worker.proc
    if proc is None:
        return
    if proc.poll() is None:
        proc.kill()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        log.warning("validation worker %d (pid %d) did not exit", worker.number, proc.pid)
