"""`minikafka dump` and iter_partition_batches, on segment files written by hand."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from broker.tools.dump import find_partition_dirs, iter_partition_batches, main
from protocol import compression
from protocol.records import CorruptBatchError, Record, build_batch, set_base_offset

TS = 1_700_000_000_000
# TS and TS + 7 as people read them.
AT = "(2023-11-14T22:13:20.000Z)"
AT_7 = "(2023-11-14T22:13:20.007Z)"


def batch_at(offset: int, n: int = 2, **kw: int) -> bytes:
    buf = bytearray(
        build_batch([(b"k%d" % i, b"v%d" % i) for i in range(n)], base_timestamp=TS, **kw)
    )
    set_base_offset(buf, offset)  # as the broker does on append: CRC stays valid
    return bytes(buf)


def segment(directory: Path, base: int, *batches: bytes) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{base:020d}.log"
    path.write_bytes(b"".join(batches))
    return path


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    segment(tmp_path / "orders-0", 0, batch_at(0), batch_at(2, 3, codec=compression.LZ4))
    segment(tmp_path / "orders-0", 5, batch_at(5, 1, producer_id=9, producer_epoch=1))
    segment(tmp_path / "orders-1", 0, batch_at(0, 1))
    (tmp_path / "orders-0" / "00000000000000000000.index").write_bytes(b"\x00" * 8)
    (tmp_path / "orders-0" / "notes.log").write_text("not a segment")
    (tmp_path / "empty-dir").mkdir()
    (tmp_path / "stray.txt").write_text("x")
    return tmp_path


def test_iter_partition_batches_reads_segments_in_offset_order(data_dir: Path) -> None:
    found = list(iter_partition_batches(data_dir / "orders-0"))
    assert [(h.base_offset, h.records_count) for h, _ in found] == [(0, 2), (2, 3), (5, 1)]
    assert found[2][0].producer_id == 9
    assert found[1][1] == batch_at(2, 3, codec=compression.LZ4)


def test_segments_sort_by_offset_not_by_creation(tmp_path: Path) -> None:
    part = tmp_path / "t-0"
    segment(part, 100, batch_at(100))
    segment(part, 20, batch_at(20))
    assert [h.base_offset for h, _ in iter_partition_batches(part)] == [20, 100]


def test_find_partition_dirs(data_dir: Path) -> None:
    assert find_partition_dirs(data_dir) == [data_dir / "orders-0", data_dir / "orders-1"]
    assert find_partition_dirs(data_dir / "orders-1") == [data_dir / "orders-1"]


def test_dump_data_dir(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(data_dir)]) == 0
    out = capsys.readouterr().out
    assert out.index("partition orders-0") < out.index("partition orders-1")
    assert "segment 00000000000000000005.log" in out
    assert "notes.log" not in out
    lines = [line.strip() for line in out.splitlines() if line.strip().startswith("offset")]
    assert len(lines) == 4
    assert lines[0] == (
        f"offset 0..1 pid -1 epoch -1 seq - codec none count 2 ts {TS} {AT}..{TS} {AT} "
        f"size {len(batch_at(0))} crc ok"
    )
    assert "offset 2..4" in lines[1] and "codec lz4" in lines[1] and "count 3" in lines[1]
    assert "pid 9 epoch 1 seq 0..0" not in lines[2]  # base_sequence -1 here
    assert "pid 9 epoch 1 seq -" in lines[2]


def test_dump_shows_sequence_range_and_flags(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    segment(
        tmp_path / "t-0",
        0,
        batch_at(0, 3, producer_id=4, producer_epoch=2, base_sequence=10, transactional=True),
    )
    assert main([str(tmp_path / "t-0")]) == 0
    out = capsys.readouterr().out
    lines = out.rstrip().splitlines()
    assert "pid 4 epoch 2 seq 10..12" in lines[-2] and lines[-2].endswith("crc ok txn")
    # No marker closed it: the transaction is listed as open from its first offset.
    assert lines[-1] == "  open transactions: pid 4 since offset 0"


def test_dump_records(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    records = [
        Record(0, 0, b"key", b"x" * 200, (("h", b"1"),)),
        Record(1, 7, None, b"short", ()),
    ]
    batch = bytearray(build_batch(records, base_timestamp=TS, codec=compression.ZSTD))
    set_base_offset(batch, 40)
    segment(tmp_path / "t-0", 40, bytes(batch))
    assert main([str(tmp_path), "--records"]) == 0
    lines = [line.strip() for line in capsys.readouterr().out.splitlines()]
    first = next(line for line in lines if line.startswith("offset 40 ts"))
    assert f"ts {TS} {AT} key b'key' value b'xxx" in first
    assert first.endswith("... headers [('h', b'1')]")
    value_repr = first.split(" value ")[1].split(" headers ")[0]
    assert len(value_repr) == 80 and value_repr.endswith("...")
    assert f"offset 41 ts {TS + 7} {AT_7} key None value b'short' headers []" in lines


def test_bad_crc_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = bytearray(batch_at(2))
    bad[-1] ^= 0xFF
    segment(tmp_path / "t-0", 0, batch_at(0), bytes(bad))
    assert main([str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert out.count("crc ok") == 1 and out.count("crc BAD") == 1


def test_trailing_partial_batch_is_reported_not_a_crash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    whole, torn = batch_at(0), batch_at(2)
    segment(tmp_path / "t-0", 0, whole, torn[:-5])
    assert main([str(tmp_path), "--records"]) == 1
    out = capsys.readouterr().out
    assert "offset 0..1" in out
    assert f"at {len(whole)}: trailing partial batch: {len(torn) - 5} of {len(torn)} bytes" in out
    # Tests reading what the broker stored see only whole batches, as recovery would.
    assert [h.base_offset for h, _ in iter_partition_batches(tmp_path / "t-0")] == [0]


def test_trailing_partial_header_is_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    segment(tmp_path / "t-0", 0, batch_at(0), batch_at(2)[:30])
    assert main([str(tmp_path)]) == 1
    assert "trailing partial batch header: 30 bytes" in capsys.readouterr().out


def test_corrupt_header_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    segment(tmp_path / "t-0", 0, batch_at(0), bytes(100))  # zeros: batch_length 0
    assert main([str(tmp_path)]) == 1
    assert "corrupt batch header" in capsys.readouterr().out
    with pytest.raises(CorruptBatchError):
        list(iter_partition_batches(tmp_path / "t-0"))


def test_undecodable_records_are_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = bytearray(batch_at(0, codec=compression.GZIP))
    bad[70:80] = b"\xee" * 10
    segment(tmp_path / "t-0", 0, bytes(bad))
    assert main([str(tmp_path), "--records"]) == 1
    out = capsys.readouterr().out
    assert "crc BAD" in out and "records not decodable" in out


def test_empty_segment(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    segment(tmp_path / "t-0", 0)
    assert main([str(tmp_path)]) == 0
    assert "segment 00000000000000000000.log (0 bytes)" in capsys.readouterr().out
    assert list(iter_partition_batches(tmp_path / "t-0")) == []


def test_missing_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path / "nope")]) == 2
    assert "not a directory" in capsys.readouterr().err


def test_no_partitions(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path)]) == 1
    assert "no partition directories" in capsys.readouterr().err


def test_usage(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main([])
    assert exc.value.code == 2
    assert "minikafka dump" in capsys.readouterr().err


def test_dump_into_a_closed_pipe_exits_quietly(tmp_path: Path) -> None:
    # `minikafka dump DIR | head`: the reader goes away early; no BrokenPipeError traceback.
    segment(tmp_path / "big-0", 0, *(batch_at(i * 2) for i in range(5000)))
    proc = subprocess.Popen(
        [sys.executable, "-m", "broker", "dump", str(tmp_path), "--records"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline().startswith(b"partition big-0")
    proc.stdout.close()  # what head does after its lines
    err = proc.stderr.read()
    proc.stderr.close()
    assert proc.wait(timeout=30) == 0
    assert err == b""
