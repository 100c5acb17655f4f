"""Which storage errors are transient: running out of file descriptors.

EMFILE (this process's RLIMIT_NOFILE) and ENFILE (the system's table) mean only that a file
could not be opened now; nothing on disk is wrong, and the next try succeeds once a
descriptor is free. A write that fails so must not take the partition offline as a failed
write or fsync does (Kafka's LogDirFailureChannel): the request gets a retriable error and
the log is left as it was. Opening is the only step that allocates a descriptor, so these
errors arrive before anything of the batch is written.
"""

from __future__ import annotations

import errno

OUT_OF_DESCRIPTORS = frozenset({errno.EMFILE, errno.ENFILE})


def out_of_descriptors(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in OUT_OF_DESCRIPTORS
