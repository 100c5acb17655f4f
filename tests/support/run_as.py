"""Run ``python -m broker ARGS`` as another user: ``run_as.py UID ARGS...`` (tests, as root).

The interpreter may live where that user cannot read (a pyenv under /root), so everything a
failing start needs is imported first, then the process drops to the user (all ids, no
groups, so no capabilities) and runs the command line as ``python -m broker`` would.
"""

from __future__ import annotations

# Imported for what they load, before the ids change.
import encodings.idna  # noqa: F401  (socket.getaddrinfo encodes host names with it)
import os
import sys

import broker.cli
import broker.process
import broker.runtime.startup_errors
import broker.security.authorizer
import broker.toolkit.host
import storage.dir_lock  # noqa: F401


def main() -> int:
    uid = int(sys.argv[1])
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)
    return broker.cli.main(sys.argv[2:])


if __name__ == "__main__":
    raise SystemExit(main())
