"""PartitionLog.truncate_to (UnifiedLog.truncateTo, as a follower elected leader keeps only
what it had): what stays on disk and in the indexes, producer state rebuilt, and the same log
after a reopen."""

from __future__ import annotations

from pathlib import Path

from protocol.errors import ErrorCode
from tests.storage.test_partition_log import PID, open_log, produce, stored_headers


def test_truncate_across_segments_keeps_the_batches_below_and_rebuilds_producer_state(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t-0"
    plog = open_log(path, segment_bytes=600)
    for i in range(10):
        assert produce(plog, 3, pid=PID, epoch=0, seq=3 * i).base_offset == 3 * i
    plog.take_snapshot()
    bases = [s.base_offset for s in plog.segments]
    assert len(bases) > 3
    cut = bases[2] + 3  # inside the third segment, at a batch boundary

    assert plog.truncate_to(cut) == 30 - cut
    assert plog.log_end_offset == cut
    assert [s.base_offset for s in plog.segments] == bases[:3]
    assert [b for b, _, _ in stored_headers(path)] == list(range(0, cut, 3))
    assert not any(p.suffix == ".log" and int(p.stem) > bases[2] for p in path.iterdir())
    # The truncated batches are gone for idempotence too: their sequences append again,
    # and a batch still below the cut is a duplicate.
    entry = plog.producers.get(PID)
    assert entry is not None and entry.last_seq == cut - 1
    again = produce(plog, 3, pid=PID, epoch=0, seq=cut)
    assert again.error == ErrorCode.NONE and again.base_offset == cut
    assert produce(plog, 3, pid=PID, epoch=0, seq=cut).base_offset == cut
    assert plog.read(cut, 1 << 20)
    assert plog.truncate_to(plog.log_end_offset) == 0
    plog.close()

    reopened = open_log(path, segment_bytes=600)
    assert reopened.log_end_offset == cut + 3
    assert [b for b, _, _ in stored_headers(path)] == list(range(0, cut + 3, 3))
    entry = reopened.producers.get(PID)
    assert entry is not None and entry.last_seq == cut + 2
    reopened.close()


def test_truncate_to_the_log_start_empties_the_log_and_caps_the_high_watermark(
    tmp_path: Path,
) -> None:
    plog = open_log(tmp_path / "t-0")
    for _ in range(4):
        produce(plog, 2)
    plog.set_high_watermark(6)
    assert plog.truncate_to(0) == 8
    assert plog.log_end_offset == 0 and plog.high_watermark == 0
    assert produce(plog, 1).base_offset == 0
    plog.close()
