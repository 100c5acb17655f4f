#!/usr/bin/env bash
# `make docker-check`: build the real image with podman and run it, as a user would.
#
#  1. install podman & co. (apt) if missing; build the stand-in python:3.11-slim base once;
#  2. build the unchanged Dockerfile; report the image size;
#  3. `docker run` it with a published port; drive the HEALTHCHECK until healthy (report
#     start-to-healthy); produce and consume from the host with confluent-kafka through the
#     advertised host listener; `docker stop` (must return within 3 s, exit code 0);
#  4. `docker compose up` docker-compose.yml, attached and without other options, as a user
#     runs it, until the client service has produced, consumed and exited 0 (certs exited 0,
#     the broker still running); `docker compose down -v` ends it;
#  5. a simulated 3-node cluster: `docker run` with KAFKA_MINIKAFKA_CLUSTER_SIZE=3 and three
#     published ports, the compose client script from the host through every node; then
#     `docker compose -f docker-compose.cluster.yml up` likewise until its client exits 0.
#
# Machine-specific workarounds live here, never in the Dockerfile or compose file:
# - no registry pulls: the base image is a local debootstrap stand-in (build-base-image.sh);
# - runc, cgroupfs and a file events log (containers.conf): crun fails on hybrid cgroups;
# - pip in the build trusts the host's CA bundle, bind-mounted over the base image's;
# - no systemd, so nothing runs health checks by itself: this script runs
#   `podman healthcheck run` in a bounded loop;
# - `docker` talks to `podman system service`; compose service names resolve through the
#   CNI dnsname plugin.
# Needs root. Ports are published on 127.0.0.1 only.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
VENV=${VENV:-.venv}
IMAGE=minikafka:latest
CLIENT_IMAGE=minikafka-compose-client:latest
NAME=minikafka-check
PROJECT=minikafka-check
HOST_PORT=${HOST_PORT:-39092}
WORK=$(mktemp -d /var/tmp/minikafka-check.XXXXXX)
SOCK=$WORK/podman.sock
export CONTAINERS_CONF=$REPO/docker/containers.conf
export DOCKER_HOST=unix://$SOCK
export DOCKER_CONFIG=$WORK/docker-config
unset COMPOSE_FILE COMPOSE_PROJECT_NAME DOCKER_CONTEXT

now() { date +%s.%N; }
elapsed() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.2f}')" "$1" "$2"; }
step() { printf '\n== %s\n' "$*"; }
service_pid=
up_pid=
cleanup() {
    set +e
    docker rm -f "$NAME" "$NAME-cluster" >/dev/null 2>&1
    if [[ -f $WORK/compose-cluster-up ]]; then
        timeout -k 5 60 docker compose -p "$PROJECT-cluster" -f docker-compose.cluster.yml down -v >/dev/null 2>&1
    fi
    if [[ -f $WORK/compose-up ]]; then
        timeout -k 5 60 docker compose -p "$PROJECT" -f docker-compose.yml down -v >/dev/null 2>&1
    fi
    [[ -n $up_pid ]] && kill "$up_pid" 2>/dev/null && wait "$up_pid" 2>/dev/null
    [[ -n $service_pid ]] && kill "$service_pid" 2>/dev/null && wait "$service_pid" 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT

step "tools"
missing=()
for tool in podman buildah debootstrap runc newuidmap; do
    command -v "$tool" >/dev/null || missing+=("$tool")
done
[[ -x /usr/lib/cni/dnsname ]] || missing+=(dnsname)
if ((${#missing[@]})); then
    echo "installing (missing: ${missing[*]})"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        podman buildah debootstrap runc uidmap containers-storage iptables \
        golang-github-containernetworking-plugin-dnsname dnsmasq-base >/dev/null
fi
[[ -x $VENV/bin/docker-compose ]] || { echo "run 'make setup' first" >&2; exit 1; }
mkdir -p "$DOCKER_CONFIG/cli-plugins"
ln -sf "$REPO/$VENV/bin/docker-compose" "$DOCKER_CONFIG/cli-plugins/docker-compose"
podman --version
docker --version
docker compose version

step "stand-in base image"
docker/build-base-image.sh

# The host's CA bundle replaces the base image's during RUN steps only (pip in the build
# must trust this machine's TLS interception); nothing of it is committed to a layer.
build_opts=(--format docker --pull=never --network=host
    -v /etc/ssl/certs/ca-certificates.crt:/etc/ssl/certs/ca-certificates.crt:ro)

step "build $IMAGE"
t0=$(now)
podman build "${build_opts[@]}" -t "$IMAGE" . >"$WORK/build.log" 2>&1 || {
    tail -40 "$WORK/build.log"
    exit 1
}
build_s=$(elapsed "$t0" "$(now)")
size=$(podman image inspect "$IMAGE" --format '{{.Size}}')
base_size=$(podman image inspect docker.io/library/python:3.11-slim --format '{{.Size}}')
echo "built in ${build_s} s; image $((size / 1000000)) MB" \
    "(base stand-in $((base_size / 1000000)) MB, minikafka adds $(((size - base_size) / 1000000)) MB)"

step "podman system service (Docker API on $SOCK)"
podman system service --time=0 "unix://$SOCK" >"$WORK/service.log" 2>&1 &
service_pid=$!
for _ in $(seq 100); do
    docker version >/dev/null 2>&1 && break
    sleep 0.1
done
docker version --format 'Docker API: server {{.Server.Version}}'

# Health checks do not run by themselves here (no systemd): run them until healthy.
wait_healthy() {
    local container=$1 tries=$2
    for _ in $(seq "$tries"); do
        if podman healthcheck run "$container" >/dev/null 2>&1; then
            return 0
        fi
        sleep 0.2
    done
    return 1
}

step "docker run, published on 127.0.0.1:$HOST_PORT"
t0=$(now)
docker run -d --name "$NAME" -p "127.0.0.1:$HOST_PORT:9092" \
    -e KAFKA_ADVERTISED_LISTENERS="PLAINTEXT://localhost:$HOST_PORT" \
    -e KAFKA_NUM_PARTITIONS=2 "$IMAGE" >/dev/null
wait_healthy "$NAME" 150 || {
    docker logs "$NAME"
    echo "FAILED: not healthy" >&2
    exit 1
}
healthy_s=$(elapsed "$t0" "$(now)")
echo "start to healthy: ${healthy_s} s ($(podman inspect "$NAME" --format '{{.State.Health.Status}}'))"
docker logs "$NAME" 2>&1 | grep -o 'minikafka started.*' || true
docker exec "$NAME" minikafka health

step "produce and consume from the host with confluent-kafka (localhost:$HOST_PORT)"
"$VENV/bin/python" - "localhost:$HOST_PORT" <<'EOF'
import sys, uuid
from confluent_kafka import Consumer, Producer, TopicPartition

bootstrap, topic = sys.argv[1], f"docker-check-{uuid.uuid4().hex[:8]}"
producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
sent = [f"value {i}".encode() for i in range(10)]
for value in sent:
    producer.produce(topic, value=value, partition=0)
assert producer.flush(30) == 0, "produce did not complete"
consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "docker-check",
                     "enable.auto.commit": False})
consumer.assign([TopicPartition(topic, 0, 0)])
got = []
while len(got) < len(sent):
    msg = consumer.poll(15)
    assert msg is not None, f"timed out after {len(got)} records"
    assert msg.error() is None, msg.error()
    got.append(msg.value())
consumer.close()
assert got == sent, got
print(f"confluent-kafka: produced and consumed {len(got)} records on {topic}")
EOF

step "docker stop"
t0=$(now)
docker stop -t 10 "$NAME" >/dev/null
stop_s=$(elapsed "$t0" "$(now)")
exit_code=$(docker inspect "$NAME" --format '{{.State.ExitCode}}')
echo "docker stop returned in ${stop_s} s; exit code $exit_code"
docker logs "$NAME" 2>&1 | tail -3
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) < 3 else 1)" "$stop_s" || {
    echo "FAILED: docker stop took ${stop_s} s" >&2
    exit 1
}
[[ $exit_code == 0 ]] || { echo "FAILED: exit code $exit_code" >&2; exit 1; }
docker rm "$NAME" >/dev/null

step "docker compose up, as a user runs it (certs, broker, then the client once healthy)"
# The compose file's client image, built from its own dockerfile_inline.
docker compose -f docker-compose.yml config --format json | python3 -c \
    'import json, sys; print(json.load(sys.stdin)["services"]["client"]["build"]["dockerfile_inline"])' \
    >"$WORK/client.Dockerfile"
podman build "${build_opts[@]}" -t "$CLIENT_IMAGE" -f "$WORK/client.Dockerfile" docker \
    >"$WORK/client-build.log" 2>&1 || {
    tail -40 "$WORK/client-build.log"
    exit 1
}
container_state() { docker inspect "$1" --format '{{.State.Status}} {{.State.ExitCode}}' 2>/dev/null || true; }

# compose_check FILE PROJECT VOLUME [certs]: `docker compose up` FILE until its client exits,
# which must be with 0 (and the certs service too, when named) while the broker still runs;
# then `down -v`, which must end the attached `up` and delete VOLUME. Sets compose_s.
compose_check() {
    local file=$1 project=$2 volume=$3 certs=${4:-} marker=$WORK/compose-up
    [[ $file == docker-compose.yml ]] || marker=$WORK/compose-cluster-up
    touch "$marker"
    local t0 driver client_state= certs_state=exited\ 0 broker_state
    t0=$(now)
    (wait_healthy "$project-broker-1" 300 || true) &
    driver=$!
    # Plain `docker compose up`, attached, as the README says: it runs the one-shot certs
    # service, the broker once certs completed, the client once the broker is healthy, and
    # keeps running with the broker after the client exits. (`--exit-code-from client` is not
    # what a user runs: it implies --abort-on-container-exit, which stops everything, client
    # included, as soon as certs completes.) The check waits for the client container to
    # exit and takes its exit code.
    docker compose -p "$project" -f "$file" up --no-build >"$WORK/compose.log" 2>&1 &
    up_pid=$!
    for _ in $(seq 900); do # 180 s
        client_state=$(container_state "$project-client-1")
        [[ $client_state == exited* ]] && break
        kill -0 "$up_pid" 2>/dev/null || break
        sleep 0.2
    done
    compose_s=$(elapsed "$t0" "$(now)")
    kill "$driver" 2>/dev/null || true
    wait "$driver" 2>/dev/null || true
    [[ -n $certs ]] && certs_state=$(container_state "$project-certs-1")
    broker_state=$(container_state "$project-broker-1")
    grep -E '(certs|client)-1 +\|' "$WORK/compose.log" || true
    echo "certs: $([[ -n $certs ]] && echo "${certs_state:-no container}" || echo none);" \
        "broker: ${broker_state:-no container};" \
        "client: ${client_state:-no container} after ${compose_s} s"
    if [[ $client_state != "exited 0" || $certs_state != "exited 0" || $broker_state != running* ]]; then
        kill -0 "$up_pid" 2>/dev/null || echo "docker compose up exited early"
        tail -40 "$WORK/compose.log"
        echo "FAILED: docker compose up ($file): the client did not produce and consume" >&2
        exit 1
    fi

    step "docker compose -f $file down -v"
    t0=$(now)
    timeout -k 10 60 docker compose -p "$project" -f "$file" down -v
    rm -f "$marker"
    echo "down -v in $(elapsed "$t0" "$(now)") s"
    # The attached `up` ends with its containers.
    for _ in $(seq 150); do
        kill -0 "$up_pid" 2>/dev/null || break
        sleep 0.2
    done
    if kill -0 "$up_pid" 2>/dev/null; then
        kill "$up_pid" 2>/dev/null || true
        echo "FAILED: docker compose up still running after down -v" >&2
        exit 1
    fi
    wait "$up_pid" 2>/dev/null || true
    up_pid=
    if podman volume exists "${project}_$volume"; then
        echo "FAILED: volume ${project}_$volume still exists" >&2
        exit 1
    fi
}

compose_check docker-compose.yml "$PROJECT" minikafka-data certs
single_compose_s=$compose_s

step "a simulated 3-node cluster: docker run, published on 127.0.0.1:$HOST_PORT-$((HOST_PORT + 2))"
# Node k listens on 9092 + k and advertises $HOST_PORT + k: publish all three.
docker run -d --name "$NAME-cluster" \
    -p "127.0.0.1:$HOST_PORT-$((HOST_PORT + 2)):9092-9094" \
    -e KAFKA_MINIKAFKA_CLUSTER_SIZE=3 \
    -e KAFKA_ADVERTISED_LISTENERS="PLAINTEXT://localhost:$HOST_PORT" "$IMAGE" >/dev/null
wait_healthy "$NAME-cluster" 150 || {
    docker logs "$NAME-cluster"
    echo "FAILED: the cluster is not healthy" >&2
    exit 1
}
# The compose client script from the host: three nodes, a topic of three replicated
# partitions (one led by each node), every record back.
"$VENV/bin/python" docker/compose-client.py "localhost:$HOST_PORT" --nodes 3
docker stop -t 10 "$NAME-cluster" >/dev/null
docker rm "$NAME-cluster" >/dev/null

step "docker compose -f docker-compose.cluster.yml up (the broker, then the client once healthy)"
compose_check docker-compose.cluster.yml "$PROJECT-cluster" minikafka-cluster-data

step "summary"
echo "image size: $((size / 1000000)) MB (base stand-in $((base_size / 1000000)) MB)"
echo "build: ${build_s} s; start to healthy: ${healthy_s} s; docker stop: ${stop_s} s"
echo "compose up to client exit 0: ${single_compose_s} s; the cluster's: ${compose_s} s"
echo "docker-check: OK"
