"""The ``minikafka`` command: ``minikafka [server.properties] [--override key=value]...``.

Shaped like Kafka's ``kafka-server-start.sh server.properties --override k=v`` so the
same files and flags work; ``minikafka dump ...`` runs the log-inspection tool instead and
``minikafka health`` the container health check and ``minikafka fault ...`` talks to a
broker's fault-injection control plane.
Exit status 2 means the command line, the configuration or the environment was rejected
(an invalid value, a port in use, a data directory locked, not writable or not a directory),
said in one line that names the fix.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import logging
import os
import sys
from collections.abc import Iterator

from broker import __version__
from broker.config.loader import load_config, properties_help
from broker.config.model import ConfigError
from broker.runtime.logging_setup import configure

__all__ = ["build_parser", "main"]

log = logging.getLogger("broker.cli")

_DESCRIPTION = """\
A Kafka broker for stock Kafka clients.

Configuration uses Kafka's property names, from three sources; later ones win:
  1. the properties file given as the first argument (Java properties format),
  2. KAFKA_<NAME> environment variables, named as the apache/kafka Docker image names
     them: upper-case, '.' -> '_', '_' -> '__', '-' -> '___' (KAFKA_LOG_DIRS = log.dirs),
  3. --override name=value flags.
Unknown properties are warned about and ignored; an invalid value stops start-up.

'minikafka dump ...' inspects log files instead (see 'minikafka dump --help');
'minikafka health' checks that a broker answers ApiVersions (exit 0/1, for containers);
'minikafka fault ...' injects faults through a broker's control plane (see --help there)."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="minikafka",
        description=_DESCRIPTION,
        epilog=properties_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "properties_file",
        nargs="?",
        metavar="server.properties",
        help="Kafka-style properties file (optional)",
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"minikafka {__version__} (Apache Kafka 4.0 protocol)",
    )
    parser.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="set a property, overriding the file and the environment (repeatable)",
    )
    return parser


@contextlib.contextmanager
def imported_without_gc() -> Iterator[None]:
    """The cyclic garbage collector off while the server's modules are imported, and what
    they made frozen (never examined again) after. Imports make hundreds of thousands of
    objects that live as long as the process (modules, classes, functions), so collections
    during them find nothing and cost about a tenth of the start's CPU; frozen, they are not
    traversed again by every later full collection either."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if args and args[0] == "dump":
        # Imported lazily: the dump tool needs none of the server's machinery.
        from broker.tools.dump import main as dump_main

        return dump_main(args[1:])
    if args and args[0] == "health":
        # The container health check runs this every few seconds: keep it import-light.
        from broker.tools.health import main as health_main

        return health_main(args[1:])
    if args and args[0] == "fault":
        from broker.toolkit.fault_cli import main as fault_main

        return fault_main(args[1:])

    try:
        ns = build_parser().parse_args(args)
    except SystemExit as exc:  # --help (0) or a usage error (2), already printed
        return exc.code if isinstance(exc.code, int) else 2

    try:
        config, warnings, _sources = load_config(ns.properties_file, os.environ, ns.override)
    except ConfigError as exc:
        print(f"minikafka: {exc}", file=sys.stderr)
        return 2

    configure(config.log_level)
    for warning in warnings:
        log.warning("%s", warning)

    with imported_without_gc():
        from broker.process import run
        from broker.runtime.startup_errors import StartupError
        from storage.dir_lock import DataDirLockedError

    try:
        return run(config, config_source=config.source_summary)
    except (ConfigError, StartupError, DataDirLockedError) as exc:
        # Found at start-up (a TLS key that does not load, a port in use, a data directory
        # locked or not writable): Kafka does not start either ("Fatal error during
        # KafkaServer startup"); one line, and nothing in the data directory touched.
        log.error("%s", exc)
        return 2
