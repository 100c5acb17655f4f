"""How long Store.open takes on a 1 GiB partition after a clean close and after a crash.

Not a test: ``python -m tests.storage.recovery_timing [--gib N] [--dir PATH]``.

Builds one partition of ~1 GiB (16 KiB batches from 8 idempotent producers, Kafka's default
segment.bytes of 1 GiB, so it is one segment) in a temporary directory, then times:

- clean open: after Store.close (marker present): trusts the index and the snapshot;
- crash open: after close_unclean (no marker): CRC-checks every batch after the recovery
  point (here the whole segment, since it is the active one) and replays producer state;
- no-snap: a crash open with the snapshots deleted, so producer state is replayed from the
  first batch (a second walk over every header);

each with the files in the page cache (warm: read once just before) and evicted with
posix_fadvise (cold; clean pages only, so no root needed; in a VM the host's cache may still
serve the reads). Peak RSS is the process high-water mark, reset before each
open through /proc/self/clear_refs where the kernel allows it.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import tempfile
import time
from pathlib import Path

from protocol.records import parse_header, write_crc
from storage.store import Store
from tests.storage.test_segment import make_batch

BATCH_BYTES = 16 * 1024
PRODUCERS = 8
_SEQ = 53  # base_sequence field of a RecordBatch v2


def _peak_rss_mib() -> float:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _reset_peak_rss() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def _current_rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _evict(data_dir: Path) -> None:
    for path in data_dir.rglob("*"):
        if path.is_file():
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)  # only clean pages can be dropped
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def _warm(data_dir: Path) -> None:
    for path in data_dir.rglob("*"):
        if path.is_file():
            with path.open("rb") as f:
                while f.read(1 << 20):
                    pass


def build(data_dir: Path, total_bytes: int) -> tuple[int, float]:
    store = Store.open(data_dir, node_id=1)
    store.create_topic("timing", 1)
    plog = store.partition("timing", 0)
    assert plog is not None
    records = 16
    template = make_batch(records, value_size=BATCH_BYTES // records - 10, timestamp=0)
    started = time.monotonic()
    templates = []
    for pid in range(PRODUCERS):
        t = make_batch(
            records,
            producer_id=1000 + pid,
            epoch=0,
            base_seq=0,
            value_size=len(template) // records - 10,
            timestamp=int(time.time() * 1000),
        )
        templates.append(t)
    seqs = [0] * PRODUCERS
    written = 0
    n = 0
    # Stay within one segment: the active one is what crash recovery must read whole.
    while written + len(templates[0]) <= total_bytes:
        p = n % PRODUCERS
        batch = bytearray(templates[p])
        batch[_SEQ : _SEQ + 4] = seqs[p].to_bytes(4, "big")
        write_crc(batch)
        result = plog.append(batch, parse_header(batch), now_ms=0)
        assert result.error == 0, result
        seqs[p] += records
        written += len(batch)
        n += 1
    build_s = time.monotonic() - started
    store.close()
    return n, build_s


def timed_open(data_dir: Path, label: str, cold: bool) -> None:
    if label == "no-snap":
        for path in (data_dir / "timing-0").glob("*.snapshot"):
            path.unlink()
    if cold:
        _evict(data_dir)
    else:
        _warm(data_dir)
    reset = _reset_peak_rss()
    before = _current_rss_mib()
    started = time.monotonic()
    store = Store.open(data_dir, node_id=1)
    elapsed = (time.monotonic() - started) * 1000
    peak = _peak_rss_mib()
    plog = store.partition("timing", 0)
    assert plog is not None
    info = plog.recovery
    print(
        f"{label:<7} {'cold' if cold else 'warm'}: {elapsed:8.1f} ms  "
        f"peak RSS {peak:6.1f} MiB{'' if reset else ' (process-wide)'} "
        f"(+{peak - before:.1f} over {before:.1f})  "
        f"crc-checked {info.crc_checked_bytes / 2**20:.0f} MiB, "
        f"replayed {info.replayed_batches} batches  | {store.recovery_summary}"
    )
    if label == "clean":
        store.close()
    else:
        store.close_unclean()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=1.0, help="partition size in GiB")
    parser.add_argument("--dir", help="parent directory for the data (default: a temp dir)")
    args = parser.parse_args()
    parent = tempfile.mkdtemp(prefix="recovery-timing-", dir=args.dir)
    data_dir = Path(parent) / "data"
    try:
        n, build_s = build(data_dir, int(args.gib * 2**30))
        logs = list((data_dir / "timing-0").glob("*.log"))
        size = sum(p.stat().st_size for p in logs)
        print(
            f"built {size / 2**30:.2f} GiB in {len(logs)} segment(s): {n} batches of "
            f"~{BATCH_BYTES // 1024} KiB from {PRODUCERS} producers in {build_s:.1f} s; "
            f"peak RSS so far {_peak_rss_mib():.0f} MiB"
        )
        for label, cold in (
            ("clean", False),
            ("crash", False),
            ("clean", True),
            ("crash", True),
            ("no-snap", False),
        ):
            # Leave the directory as a clean shutdown or as a crash (no marker) would.
            store = Store.open(data_dir, node_id=1)
            if label == "clean":
                store.close()
            else:
                store.close_unclean()
            timed_open(data_dir, label, cold)
    finally:
        shutil.rmtree(parent, ignore_errors=True)


if __name__ == "__main__":
    main()
