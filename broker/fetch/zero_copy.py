"""Fetch responses send record bytes straight from the segment file (sendfile).

The handler describes where the records lie (a FileRecords part); the connection writes the
parts in order and hands large file parts to ``loop.sendfile``, so stored batches go from
the page cache to the socket without being copied through Python. Small parts are read and
written normally: below SENDFILE_MIN_BYTES the extra system calls cost more than the copy.

A part may be sent well after the handler chose it (an earlier partition of the same
response can hold the connection for as long as the client takes to read it). Meanwhile
retention, DeleteRecords or DeleteTopics may take its segment out of the log: as in Kafka,
the segment's files are only renamed then and stay open for file.delete.delay.ms
(storage.delayed_delete), so the part is still read whole and the frame stays intact.
"""

from __future__ import annotations

import os
from typing import BinaryIO

from protocol.codec import Deferred
from storage.partition_log import SegmentSlice

SENDFILE_MIN_BYTES = 64 * 1024


class FileRecords(Deferred):
    def __init__(self, where: SegmentSlice) -> None:
        self.where = where

    def __len__(self) -> int:
        return self.where.length

    @property
    def position(self) -> int:
        return self.where.position

    def read(self) -> bytes:
        return self.where.read()

    def open(self) -> BinaryIO:
        """A private handle on the log file (a duplicated descriptor): the segment may be
        rolled, retained away or deleted while the send is under way."""
        return os.fdopen(self.where.segment.dup_fd(), "rb")
