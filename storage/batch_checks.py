"""Everything Produce checks and rewrites in one client batch before its append, as one pure
function of the batch bytes and the topic's settings (issue 19).

``check_batch`` runs storage.validation (ProduceRequest.validateRecords, UnifiedLog's and
LogValidator's batch checks and the record walk), then storage.record_rules (the per-record
rules and the rewrites of max_timestamp, timestamp type and irregular offset deltas). It
reads no broker or partition state, so the broker may run it on the event loop, on a
worker thread or in a worker process (broker.produce.validation_pool) and get the same answer; the
idempotence checks belong to the append (PartitionLog.append) and never run here.
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol.errors import ErrorCode
from protocol.records import BatchHeader
from protocol.value_type import value_type
from storage.record_rules import RecordsVerdict, TopicRules, check_records, rewrite_batch
from storage.validation import Validation, validate_batch


@value_type(frozen=True, slots=True)
class BatchJob:
    """One partition's batch before validation, with the settings that judge it."""

    records: memoryview | bytes
    max_message_bytes: int
    allow_zstd: bool
    depth: str
    rules: TopicRules
    now_ms: int


@dataclass(slots=True)
class CheckedBatch:
    """What the checks decided about one batch."""

    checked: Validation
    # LogValidator's verdict (None when the batch failed an earlier check).
    verdict: RecordsVerdict | None = None
    # The batch to append, rewritten as LogValidator rewrites it, and its header (a view
    # into broker.produce.validation_pool's shared area when ``slot`` >= 0).
    batch: bytearray | memoryview | None = None
    header: BatchHeader | None = None
    # The batch was rebuilt (new records section), not only patched in its header.
    rebuilt: bool = False
    slot: int = -1


def check_batch(
    job: BatchJob, header_budget: list[int] | None = None, walk_budget: list[int] | None = None
) -> CheckedBatch:
    """ProduceRequest.validateRecords, UnifiedLog's checks and LogValidator, on one batch.

    ``header_budget`` (one element, shared by a request's batches) is what the records may
    still hold in headers; HeaderBudgetExceeded beyond it (the loop's walk stops there).
    ``walk_budget`` (the same way) is how many records may still be walked one by one;
    LoopBudgetExceeded instead of walking more.
    """
    checked = validate_batch(
        job.records,
        max_message_bytes=job.max_message_bytes,
        allow_zstd=job.allow_zstd,
        depth=job.depth,
        max_headers=None if header_budget is None else header_budget[0],
        max_walked=None if walk_budget is None else walk_budget[0],
    )
    if header_budget is not None and checked.scan is not None:
        header_budget[0] -= checked.scan.headers
    if walk_budget is not None and checked.scan is not None and not checked.scan.uniform:
        walk_budget[0] -= checked.header.records_count if checked.header is not None else 0
    result = CheckedBatch(checked)
    header = checked.header
    if checked.error != ErrorCode.NONE or header is None:
        return result
    records = job.records[: checked.size]
    verdict = check_records(records, header, checked.scan, job.rules, job.now_ms)
    result.verdict = verdict
    if verdict.error == ErrorCode.NONE:
        original = bytearray(records)
        result.batch, result.header = rewrite_batch(
            original, header, checked.scan, verdict, job.rules, job.now_ms
        )
        result.rebuilt = result.batch is not original
    return result
