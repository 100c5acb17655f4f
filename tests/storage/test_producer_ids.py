"""Producer ids: blocks reserved durably before use, never reused across restarts or crashes."""

from __future__ import annotations

import struct
from pathlib import Path

import crc32c
import pytest

from storage.producer_ids import STATE_FILE, ProducerIdAllocator, ProducerIdStateError


def stored_block_end(data_dir: Path) -> int:
    raw = (data_dir / STATE_FILE).read_bytes()
    version, crc = struct.unpack_from(">hI", raw)
    assert version == 1
    assert crc == crc32c.crc32c(raw[6:])
    (end,) = struct.unpack(">q", raw[6:])
    return int(end)


def test_ids_are_sequential_and_block_end_persisted_before_use(tmp_path: Path) -> None:
    alloc = ProducerIdAllocator(tmp_path, block_size=10)
    assert not (tmp_path / STATE_FILE).exists()
    assert alloc.next_id() == 0
    assert stored_block_end(tmp_path) == 10
    assert [alloc.next_id() for _ in range(9)] == list(range(1, 10))
    assert stored_block_end(tmp_path) == 10
    assert alloc.next_id() == 10
    assert stored_block_end(tmp_path) == 20


def test_restart_resumes_above_every_id_handed_out(tmp_path: Path) -> None:
    alloc = ProducerIdAllocator(tmp_path, block_size=1000)
    seen = {alloc.next_id() for _ in range(5)}
    del alloc
    alloc = ProducerIdAllocator(tmp_path, block_size=1000)
    nxt = alloc.next_id()
    assert nxt == 1000 and nxt > max(seen)


def test_crash_mid_block_never_reuses(tmp_path: Path) -> None:
    seen: set[int] = set()
    for _ in range(4):
        # Each "process" takes a few ids and vanishes without any shutdown step.
        alloc = ProducerIdAllocator(tmp_path, block_size=3)
        ids = [alloc.next_id() for _ in range(4)]  # crosses a block boundary
        assert not seen.intersection(ids)
        seen.update(ids)
        del alloc
    assert stored_block_end(tmp_path) > max(seen)


def test_corrupt_state_is_refused(tmp_path: Path) -> None:
    ProducerIdAllocator(tmp_path).next_id()
    path = tmp_path / STATE_FILE
    raw = bytearray(path.read_bytes())
    raw[-1] ^= 1
    path.write_bytes(raw)
    with pytest.raises(ProducerIdStateError):
        ProducerIdAllocator(tmp_path)
    path.write_bytes(raw[:5])
    with pytest.raises(ProducerIdStateError):
        ProducerIdAllocator(tmp_path)
