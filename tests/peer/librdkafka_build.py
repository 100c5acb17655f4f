"""Fetch and build librdkafka and its test-runner, once per version, under build/peer/.

Sources come only from package registries, with their ordinary clients:
- 2.15.1: the npm package @confluentinc/kafka-javascript@1.10.1 bundles librdkafka 2.15.1
  with its tests/ (the librdkafka closest to confluent-kafka 2.16's), fetched by `npm pack`.
- 2.0.2: Debian bookworm's librdkafka source package (kcat's librdkafka), fetched by
  `apt-get source` through a project-local apt configuration (build/peer/apt) that adds the
  deb-src lines of the machine's own Debian sources, leaving /etc/apt untouched.

A build is reused while its stamp file holds the same key (version, source, configure
flags); nothing here is ever committed (build/ is git-ignored).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "build" / "peer"

# GSSAPI (Kerberos) and libcurl (OIDC) serve only SASL tests we cannot run yet (issue 15).
CONFIGURE_FLAGS = ["--disable-gssapi", "--disable-curl"]

# Debian packages the build needs (Debian's Build-Depends of librdkafka, less debhelper);
# installed with apt-get only when missing. rapidjson-dev lets the suite check statistics
# JSON (tests 0053, 0098, 0110 skip without it); dpkg-dev unpacks the Debian source
# package; nodejs/npm fetch the npm package.
APT_PACKAGES = [
    "build-essential",
    "pkg-config",
    "python3",
    "zlib1g-dev",
    "libzstd-dev",
    "liblz4-dev",
    "libssl-dev",
    "rapidjson-dev",
    "dpkg-dev",
]
# Commands checked by name, as `make compat-tools` does: a Node.js from elsewhere bundles
# its own npm, which Debian's npm package would conflict with.
APT_FOR_COMMAND = {"npm": ["nodejs", "npm"]}
JDK_PACKAGES = ["openjdk-17-jdk-headless"]
DEBIAN_SOURCES = Path("/etc/apt/sources.list.d/debian.sources")


@dataclass(frozen=True)
class Source:
    version: str
    origin: str  # "npm" or "debian"
    package: str  # npm spec, or Debian source package=version

    @property
    def home(self) -> Path:
        return BUILD / f"librdkafka-{self.version}"

    @property
    def tree(self) -> Path:
        return self.home / "librdkafka"

    @property
    def tests_dir(self) -> Path:
        return self.tree / "tests"

    @property
    def stamp_key(self) -> str:
        return f"{self.version} {self.origin}:{self.package} {' '.join(CONFIGURE_FLAGS)}\n"


SOURCES = {
    "2.15.1": Source("2.15.1", "npm", "@confluentinc/kafka-javascript@1.10.1"),
    "2.0.2": Source("2.0.2", "debian", "librdkafka=2.0.2-1"),
}


def say(message: str) -> None:
    print(f"[peer-tests] {message}", flush=True)


def run(args: list[str], cwd: Path | None = None, log: Path | None = None) -> None:
    """Run a build step; its output goes to `log` (shown in full when the step fails)."""
    if log is None:
        subprocess.run(args, cwd=cwd, check=True)
        return
    with log.open("ab") as sink:
        done = subprocess.run(args, cwd=cwd, stdout=sink, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        sys.stdout.write(log.read_text(errors="replace")[-6000:])
        raise SystemExit(f"build step failed ({done.returncode}): {' '.join(args)}")


def ensure_apt_packages() -> None:
    missing = [p for p in APT_PACKAGES if not _installed(p)]
    for command, packages in APT_FOR_COMMAND.items():
        if shutil.which(command) is None:
            missing += packages
    _apt_install(missing)


def ensure_jdk() -> None:
    """A javac: 0098_consumer_txn (the cluster run) builds librdkafka's Java helper programs
    (tests/java, `make -s java`) against Kafka's clients jar; Debian 12's JDK 17, as
    `make compat-tools` installs it."""
    if shutil.which("javac") is None:
        _apt_install(JDK_PACKAGES)


def _apt_install(missing: list[str]) -> None:
    if not missing:
        return
    say(f"installing with apt-get: {' '.join(missing)}")
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run([*sudo, "apt-get", "update", "-qq"], check=True, env=env)
    subprocess.run([*sudo, "apt-get", "install", "-y", "-qq", *missing], check=True, env=env)


def _installed(package: str) -> bool:
    done = subprocess.run(
        ["dpkg-query", "-W", "-f=${Status}", package], capture_output=True, text=True
    )
    return done.returncode == 0 and done.stdout.endswith(" installed")


def ensure_built(source: Source) -> Path:
    """The tests/ directory of a built librdkafka, building it when its stamp is stale."""
    stamp = source.home / ".built"
    if stamp.exists() and stamp.read_text() == source.stamp_key:
        say(f"librdkafka {source.version}: cached build in {source.home}")
        return source.tests_dir
    ensure_apt_packages()
    if source.home.exists():
        shutil.rmtree(source.home)
    source.home.mkdir(parents=True)
    log = source.home / "build.log"
    say(f"librdkafka {source.version}: fetching {source.package} ({source.origin})")
    if source.origin == "npm":
        _fetch_npm(source, log)
    else:
        _fetch_debian(source, log)
    say(f"librdkafka {source.version}: building (log: {log})")
    jobs = f"-j{os.cpu_count() or 2}"
    run(["./configure", *CONFIGURE_FLAGS], cwd=source.tree, log=log)
    run(["make", jobs, "libs"], cwd=source.tree, log=log)
    run(["make", jobs, "-C", "tests", "build"], cwd=source.tree, log=log)
    if not (source.tests_dir / "test-runner").exists():
        raise SystemExit(f"no test-runner after the build of {source.version}: see {log}")
    stamp.write_text(source.stamp_key)
    return source.tests_dir


def _fetch_npm(source: Source, log: Path) -> None:
    download = source.home / "download"
    download.mkdir()
    run(["npm", "pack", source.package, "--pack-destination", str(download)], log=log)
    (tarball,) = download.glob("*.tgz")
    prefix = "package/deps/librdkafka/"
    with tarfile.open(tarball) as archive:
        members = [m for m in archive.getmembers() if m.name.startswith(prefix)]
        for member in members:
            member.name = member.name[len(prefix) :]
        archive.extractall(source.tree, members=members, filter="data")
    # npm drops the executable bits the build scripts need.
    for script in ["configure", "lds-gen.py", "tests/run-test.sh", "tests/until-fail.sh"]:
        path = source.tree / script
        if path.exists():
            path.chmod(0o755)


def _fetch_debian(source: Source, log: Path) -> None:
    apt = BUILD / "apt"
    parts, lists = apt / "sources.list.d", apt / "lists"
    (lists / "partial").mkdir(parents=True, exist_ok=True)
    parts.mkdir(parents=True, exist_ok=True)
    text = DEBIAN_SOURCES.read_text()
    (parts / "debian-src.sources").write_text(text.replace("Types: deb\n", "Types: deb-src\n"))
    options = [
        "-o",
        "Dir::Etc::SourceList=/dev/null",
        "-o",
        f"Dir::Etc::SourceParts={parts}",
        "-o",
        f"Dir::State::Lists={lists}",
    ]
    run(["apt-get", "-q", *options, "update"], log=log)
    download = source.home / "download"
    download.mkdir()
    run(
        ["apt-get", "-q", *options, "source", "--download-only", source.package],
        cwd=download,
        log=log,
    )
    (dsc,) = download.glob("*.dsc")
    # dpkg-source applies Debian's patches, so this is the librdkafka Debian ships.
    run(["dpkg-source", "-x", str(dsc), str(source.tree)], log=log)
