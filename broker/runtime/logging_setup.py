"""Process-wide logging: one stderr handler in Kafka's log4j-like layout.

``2026-11-22 10:00:00,123 INFO [broker.lifecycle.server] message`` — timestamp, level, logger in
brackets, as Kafka's default ``server.log`` lines read, so the output looks familiar.
"""

from __future__ import annotations

import logging
import sys

__all__ = ["LOG_FORMAT", "configure"]

LOG_FORMAT = "%(asctime)s %(levelname)s [%(name)s] %(message)s"
_HANDLER_NAME = "minikafka-stderr"


def configure(level: str) -> None:
    """Send all logging to stderr at ``level`` (DEBUG, INFO, WARNING or ERROR).

    Calling it again replaces the handler it installed rather than adding a second one.
    """
    root = logging.getLogger()
    for handler in list(root.handlers):
        if handler.get_name() == _HANDLER_NAME:
            root.removeHandler(handler)
            handler.close()
    handler = logging.StreamHandler(sys.stderr)
    handler.set_name(_HANDLER_NAME)
    # The default asctime layout, "2026-11-22 10:00:00,123", is the one Kafka logs use.
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    root.addHandler(handler)
    root.setLevel(level.upper())
