"""Apache Kafka itself, from Maven Central's jars, as a live reference for tests.

``KafkaReference(version).start()`` formats a fresh data directory and starts a single-node
KRaft broker+controller (``kafka.Kafka``) bound to 127.0.0.1 only, on free ports, and returns
its bootstrap address once Kafka logs "Kafka Server started"; ``stop()`` ends the JVM (also
at interpreter exit, so a failed test never leaves one running). ``run_tool`` runs one of
Kafka's command-line tools (the Java main classes behind bin/*.sh) against any bootstrap.

The jars come from ``make kafka-jars`` (tests/jvm/kafka/pom.xml, resolved by Maven into
build/kafka-<version>/libs); ``ensure_jars`` runs it when they are missing.

Tools start from a class-data-sharing archive (AppCDS) of the classes they load, made once per
version and JVM (``tools_archive``): each run then takes about half the CPU time and wall time
it takes without (a JVM that cannot use the archive ignores it silently).

Foreground use (``make kafka-reference``): ``python -m tests.support.kafka_reference
[--version V]`` prints the bootstrap address and runs until Ctrl-C.
"""

from __future__ import annotations

import argparse
import atexit
import base64
import fcntl
import hashlib
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import zipfile
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
JVM_DIR = ROOT / "tests" / "jvm" / "kafka"
# Must match KAFKA_REFERENCE_VERSIONS in the Makefile. 4.0.0 is the version minikafka
# implements; the other is the newest 4.x release Maven Central serves.
VERSIONS = ("4.0.0", "4.4.0")
DEFAULT_VERSION = os.environ.get("KAFKA_VERSION", VERSIONS[-1])
READY_LINE = "Kafka Server started"

# Kafka's tools by the name of their bin/ script; the first class the jars hold is used
# (ConfigCommand moved from core's kafka.admin to kafka-tools after 4.0).
TOOL_CLASSES: dict[str, tuple[str, ...]] = {
    "kafka-topics": ("org.apache.kafka.tools.TopicCommand",),
    "kafka-configs": ("org.apache.kafka.tools.ConfigCommand", "kafka.admin.ConfigCommand"),
    "kafka-console-producer": ("org.apache.kafka.tools.ConsoleProducer",),
    "kafka-console-consumer": ("org.apache.kafka.tools.consumer.ConsoleConsumer",),
    "kafka-consumer-groups": ("org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",),
    "kafka-groups": ("org.apache.kafka.tools.GroupsCommand",),
    "kafka-acls": ("org.apache.kafka.tools.AclCommand",),
    "kafka-transactions": ("org.apache.kafka.tools.TransactionsCommand",),
    "kafka-get-offsets": ("org.apache.kafka.tools.GetOffsetShell",),
    "kafka-delete-records": ("org.apache.kafka.tools.DeleteRecordsCommand",),
    "kafka-log-dirs": ("org.apache.kafka.tools.LogDirsCommand",),
    "kafka-features": ("org.apache.kafka.tools.FeatureCommand",),
    "kafka-metadata-quorum": ("org.apache.kafka.tools.MetadataQuorumCommand",),
    "kafka-leader-election": ("org.apache.kafka.tools.LeaderElectionCommand",),
    "kafka-broker-api-versions": ("org.apache.kafka.tools.BrokerApiVersionsCommand",),
    "kafka-producer-perf-test": ("org.apache.kafka.tools.ProducerPerformance",),
    "kafka-consumer-perf-test": ("org.apache.kafka.tools.ConsumerPerformance",),
    "kafka-storage": ("kafka.tools.StorageTool",),
}


def libs_dir(version: str) -> Path:
    return ROOT / "build" / f"kafka-{version}" / "libs"


def ensure_jars(version: str) -> Path:
    """The version's jar directory, resolved with ``make kafka-jars`` when missing."""
    libs = libs_dir(version)
    if not (libs / ".installed").exists():
        subprocess.run(
            ["make", "-s", "-C", str(ROOT), "kafka-jars", f"KAFKA_REFERENCE_VERSIONS={version}"],
            check=True,
        )
    return libs


def java() -> str:
    found = os.environ.get("KAFKA_REFERENCE_JAVA") or shutil.which("java")
    if not found:
        raise RuntimeError("no java on PATH (Kafka 4 needs Java 17+)")
    return found


@cache
def _classes(version: str) -> frozenset[str]:
    names: set[str] = set()
    for jar in libs_dir(version).glob("kafka*.jar"):
        with zipfile.ZipFile(jar) as zf:
            names.update(
                n[: -len(".class")].replace("/", ".") for n in zf.namelist() if n.endswith(".class")
            )
    return frozenset(names)


def tool_class(version: str, tool: str) -> str:
    for name in TOOL_CLASSES[tool]:
        if name in _classes(version):
            return name
    raise LookupError(f"Kafka {version}'s jars hold none of {TOOL_CLASSES[tool]}")


def java_command(version: str, main_class: str, *, heap: str, tool: bool) -> list[str]:
    args = jvm_args(version, heap=heap, tool=tool)
    if tool:
        # Named even before it exists: a JVM without a usable archive runs as without it.
        args[1:1] = [f"-XX:SharedArchiveFile={archive_path(version)}"]
    return [*args, main_class]


def jvm_args(version: str, *, heap: str, tool: bool) -> list[str]:
    """java and its options for this version's jars, up to the main class."""
    log_config = JVM_DIR / ("log4j2-tools.properties" if tool else "log4j2-broker.properties")
    args = [
        java(),
        f"-Xmx{heap}",
        "-Djava.awt.headless=true",
        f"-Dlog4j2.configurationFile={log_config}",
        "-cp",
        str(libs_dir(version) / "*"),
    ]
    # Runs in tests are short and the machine small: C1 only and the serial collector start
    # the JVM about a third faster and keep it off the other core (measured on 2 cores).
    args[2:2] = ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"]
    return args


# What the archive is made from: each tool run against a port nobody listens on, giving up
# after a second, loads its own classes and the clients' (admin, consumer, producer; the
# protocol's message classes all load with ApiKeys). Classes a run needs beyond these load
# from the jars as usual.
_QUICK_FAILURE = "default.api.timeout.ms=1000\nrequest.timeout.ms=500\n"
_ARCHIVE_RUNS: tuple[tuple[str, tuple[str, ...], str | None], ...] = (
    ("kafka-topics", ("--list", "--command-config", "{conf}"), None),
    ("kafka-acls", ("--list", "--command-config", "{conf}"), None),
    ("kafka-consumer-groups", ("--list", "--timeout", "1000", "--command-config", "{conf}"), None),
    (
        "kafka-configs",
        ("--describe", "--entity-type", "topics", "--command-config", "{conf}"),
        None,
    ),
    (
        "kafka-console-producer",
        ("--topic", "t", "--producer-property", "max.block.ms=1000"),
        "k:v\n",
    ),
    ("kafka-console-consumer", ("--topic", "t", "--group", "g", "--timeout-ms", "1000"), None),
)


def archive_path(version: str) -> Path:
    """The tools' class-data-sharing archive for this version and this JVM: it holds the
    jars' paths, sizes and times and serves only the JVM build that wrote it."""
    binary = Path(java()).resolve()
    key = f"{binary} {binary.stat().st_mtime_ns} {binary.stat().st_size}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    # Inside libs/: refetching the jars (which replaces that directory) drops it too.
    return libs_dir(version) / f"tools-{digest}.jsa"


def tools_archive(version: str) -> Path | None:
    """Make the tools' archive when missing (once; concurrent callers wait for the first);
    None, with the reason on stderr, when the JVM cannot make one."""
    archive = archive_path(version)
    if archive.exists():
        return archive
    with open(libs_dir(version).parent / ".archive.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if archive.exists():
            return archive
        began = time.monotonic()
        try:
            _make_archive(version, archive)
        except (OSError, subprocess.SubprocessError, RuntimeError) as exc:
            print(f"kafka_reference: tools run without a CDS archive: {exc}", file=sys.stderr)
            return None
        print(
            f"kafka_reference: Kafka {version} tools' CDS archive made in "
            f"{time.monotonic() - began:.0f}s ({archive.name})",
            file=sys.stderr,
        )
        return archive


def _make_archive(version: str, archive: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="kafka-cds-") as tmp:
        work = Path(tmp)
        conf = work / "admin.properties"
        conf.write_text(_QUICK_FAILURE)
        closed = f"127.0.0.1:{free_port()}"
        lists = []
        for tool, args, stdin in _ARCHIVE_RUNS:
            classes = work / f"{tool}.classlist"
            command = [
                *jvm_args(version, heap="256m", tool=True),
                "-Xshare:off",
                f"-XX:DumpLoadedClassList={classes}",
                tool_class(version, tool),
            ]
            subprocess.run(
                [*command, "--bootstrap-server", closed, *(a.format(conf=conf) for a in args)],
                input=stdin,
                stdin=None if stdin is not None else subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=120,
            )
            lists.append(classes.read_text())
        # In the order loaded (a lambda's line after its class's), each line once.
        lines = (line for text in lists for line in text.splitlines())
        merged = work / "tools.classlist"
        merged.write_text("".join(f"{line}\n" for line in dict.fromkeys(lines) if line[:1] != "#"))
        partial = archive.with_suffix(".tmp")
        done = subprocess.run(
            [
                *jvm_args(version, heap="256m", tool=True),
                "-Xshare:dump",
                f"-XX:SharedClassListFile={merged}",
                f"-XX:SharedArchiveFile={partial}",
            ],
            capture_output=True,
            text=True,
            timeout=600,
            stdin=subprocess.DEVNULL,
        )
        if done.returncode != 0 or not partial.exists():
            partial.unlink(missing_ok=True)
            raise RuntimeError(f"java -Xshare:dump failed:\n{done.stdout}{done.stderr}"[-2000:])
        os.replace(partial, archive)


def run_tool(
    tool: str,
    args: list[str],
    *,
    version: str = DEFAULT_VERSION,
    input: str | None = None,
    timeout: float = 120.0,
) -> subprocess.CompletedProcess[str]:
    """Run Kafka's ``tool`` (a bin/ script's name, e.g. "kafka-topics") with ``args``."""
    ensure_jars(version)
    tools_archive(version)
    command = java_command(version, tool_class(version, tool), heap="256m", tool=True)
    return subprocess.run(
        [*command, *args],
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=None if input is not None else subprocess.DEVNULL,
    )


def install_scripts(version: str = DEFAULT_VERSION) -> Path:
    """bin/<tool>.sh for each tool in build/kafka-<version>, as the distribution names them,
    each exec'ing java with the tool's class: the directory is a KAFKA_PATH for programs that
    run Kafka's scripts (librdkafka's suite). Returns that directory."""
    ensure_jars(version)
    tools_archive(version)
    home = libs_dir(version).parent
    bin_dir = home / "bin"
    bin_dir.mkdir(exist_ok=True)
    for tool in TOOL_CLASSES:
        try:
            main_class = tool_class(version, tool)
        except LookupError:
            continue
        command = java_command(version, main_class, heap="256m", tool=True)
        _write_script(bin_dir / f"{tool}.sh", f'#!/bin/sh\nexec {shlex.join(command)} "$@"\n')
    # kafka-run-class.sh runs any class with $CLASSPATH before the jars, as Kafka's does
    # (librdkafka's suite runs its Java helper programs through it).
    args = jvm_args(version, heap="256m", tool=True)
    jars = args.pop()
    command = f'{shlex.join(args)} "${{CLASSPATH:+$CLASSPATH:}}"{shlex.quote(jars)}'
    _write_script(bin_dir / "kafka-run-class.sh", f'#!/bin/sh\nexec {command} "$@"\n')
    return home


def _write_script(script: Path, text: str) -> None:
    # Written aside and renamed: another run may be executing the script meanwhile.
    partial = script.with_name(f".{script.name}.{os.getpid()}")
    partial.write_text(text)
    partial.chmod(0o755)
    os.replace(partial, script)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def random_cluster_id() -> str:
    # Kafka's Uuid string form: URL-safe base64 of 16 bytes without padding; Kafka refuses
    # ids that start with '-' (they read as options).
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


_RUNNING: set[KafkaReference] = set()


@atexit.register
def _kill_leftovers() -> None:
    for ref in list(_RUNNING):
        ref.kill()


class KafkaReference:
    def __init__(
        self,
        version: str = DEFAULT_VERSION,
        data_dir: Path | None = None,
        overrides: dict[str, str] | None = None,
        heap: str = "512m",
    ) -> None:
        self.version = version
        self._own_dir = data_dir is None
        self.data_dir = data_dir or Path(tempfile.mkdtemp(prefix=f"kafka-{version}-"))
        self.overrides = dict(overrides or {})
        self.heap = heap
        self.port = 0
        self.controller_port = 0
        self.cluster_id = ""
        self.start_seconds = 0.0
        self.lines: list[str] = []
        self.proc: subprocess.Popen[str] | None = None
        self._ready = threading.Event()
        self._reader: threading.Thread | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def properties(self) -> dict[str, str]:
        settings = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.bootstrap.servers": f"127.0.0.1:{self.controller_port}",
            "listeners": (
                f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}"
            ),
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": str(self.data_dir / "logs"),
            "num.partitions": "1",
            "offsets.topic.replication.factor": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            # As the distribution's config/server.properties: no wait for more members.
            "group.initial.rebalance.delay.ms": "0",
        }
        settings.update(self.overrides)
        return settings

    def format_args(self) -> list[str]:
        """kafka-storage format's quorum option: a dynamic quorum of this one controller."""
        return ["--standalone"]

    def _write_config(self) -> Path:
        path = self.data_dir / "server.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in self.properties().items()))
        return path

    def start(self, timeout: float = 180.0) -> str:
        """Format a fresh log directory, start Kafka and return its bootstrap address."""
        ensure_jars(self.version)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.port, self.controller_port = free_port(), free_port()
        while self.controller_port == self.port:
            self.controller_port = free_port()
        self.cluster_id = random_cluster_id()
        config = self._write_config()
        began = time.monotonic()
        fmt = subprocess.run(
            [
                *java_command(self.version, "kafka.tools.StorageTool", heap="256m", tool=True),
                "format",
                *self.format_args(),
                "--cluster-id",
                self.cluster_id,
                "--config",
                str(config),
            ],
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        if fmt.returncode != 0:
            raise RuntimeError(f"kafka-storage format failed:\n{fmt.stdout}{fmt.stderr}")
        self._ready.clear()
        self.proc = subprocess.Popen(
            [
                *java_command(self.version, "kafka.Kafka", heap=self.heap, tool=False),
                str(config),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            # Its own session: Ctrl-C on the foreground runner reaches Kafka only through stop().
            start_new_session=True,
        )
        _RUNNING.add(self)
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()
        deadline = began + timeout
        while not self._ready.wait(0.05):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(
                    f"Kafka {self.version} did not start:\n" + "".join(self.lines[-40:])
                )
        self.start_seconds = time.monotonic() - began
        return self.bootstrap

    def _drain(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)
            if READY_LINE in line:
                self._ready.set()

    def log_text(self) -> str:
        return "".join(self.lines)

    def is_running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 60.0) -> int | None:
        """Controlled shutdown (SIGTERM); killed when it outlasts ``timeout``."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._finish()
        return self.proc.returncode

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self._finish()

    def _finish(self) -> None:
        _RUNNING.discard(self)
        if self._reader is not None:
            self._reader.join(5)
        if self.proc is not None and self.proc.stdout is not None:
            self.proc.stdout.close()
        if self._own_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run Apache Kafka in the foreground (Ctrl-C).")
    parser.add_argument("--version", default=DEFAULT_VERSION, choices=VERSIONS)
    args = parser.parse_args(argv)
    ref = KafkaReference(args.version)
    bootstrap = ref.start()
    print(
        f"Apache Kafka {args.version} ready in {ref.start_seconds:.1f}s: bootstrap {bootstrap} "
        f"(data {ref.data_dir}); Ctrl-C stops it",
        flush=True,
    )
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    try:
        while not stopping.is_set() and ref.is_running():
            stopping.wait(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        code = ref.stop()
        print(f"Apache Kafka stopped (exit {code})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
