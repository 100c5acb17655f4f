"""Appends to one partition keep arrival order when validation runs off the loop (issue 13)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from broker.handlers.produce import _Turns
from storage.partition_log import PartitionLog


def test_a_later_request_waits_for_the_earlier_turn_on_the_same_partition(tmp_path: Path) -> None:
    async def run() -> list[str]:
        turns = _Turns()
        plog = PartitionLog.open(tmp_path / "t-0", "t", 0)
        other = PartitionLog.open(tmp_path / "t-1", "t", 1)
        appended: list[str] = []
        slow_validated = asyncio.Event()

        async def request(
            name: str, target: PartitionLog, validation: asyncio.Event | None
        ) -> None:
            previous, mine = turns.take(target)  # taken on arrival, before any await
            try:
                if validation is not None:
                    await validation.wait()  # stands for validation on a worker thread
                if previous is not None:
                    await previous
                appended.append(name)
            finally:
                turns.release(target, mine)

        first = asyncio.create_task(request("big", plog, slow_validated))
        await asyncio.sleep(0)
        second = asyncio.create_task(request("small", plog, None))
        elsewhere = asyncio.create_task(request("other-partition", other, None))
        await asyncio.wait_for(elsewhere, 5)
        assert appended == ["other-partition"]  # other partitions do not wait
        slow_validated.set()
        await asyncio.wait_for(asyncio.gather(first, second), 5)
        # Every turn ended: nothing is remembered, the next request proceeds at once.
        assert turns.take(plog)[0] is None
        plog.close()
        other.close()
        return appended

    assert asyncio.run(run()) == ["other-partition", "big", "small"]
