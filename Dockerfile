# minikafka: a Kafka broker in Python, as a drop-in for the apache/kafka image.
#   docker build -t minikafka .
#   docker run -p 127.0.0.1:9092:9092 minikafka
# Configuration: KAFKA_* environment variables named as the apache/kafka image names them
# (KAFKA_LISTENERS, KAFKA_ADVERTISED_LISTENERS, KAFKA_NUM_PARTITIONS, ...), a properties file
# given as the first argument, or --override name=value arguments.

# ---- build: one wheel for minikafka, plus wheels of its dependencies --------------------
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY protocol ./protocol
COPY storage ./storage
COPY broker ./broker
# Installed under /install, which the runtime stage copies onto /usr/local: no wheel, pip
# cache or build dependency ends up in a layer of the runtime image.
RUN pip wheel --no-cache-dir --wheel-dir /wheels . \
    && pip install --no-cache-dir --no-index --prefix=/install /wheels/*.whl

# ---- runtime ---------------------------------------------------------------------------
FROM python:3.11-slim
ARG UID=1000
ARG GID=1000
RUN groupadd --gid "${GID}" minikafka \
    && useradd --uid "${UID}" --gid minikafka --no-create-home \
        --home-dir /var/lib/minikafka --shell /usr/sbin/nologin minikafka \
    && mkdir -p /var/lib/minikafka/data \
    && chown -R minikafka:minikafka /var/lib/minikafka
COPY --from=build /install /usr/local

# The broker's own defaults bind loopback only; in a container it must listen on every
# interface. Clients are told localhost:9092, right for `docker run -p 9092:9092`; set
# KAFKA_ADVERTISED_LISTENERS to the name clients use (see docker-compose.yml).
ENV KAFKA_LISTENERS=PLAINTEXT://0.0.0.0:9092 \
    KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://localhost:9092 \
    KAFKA_LOG_DIRS=/var/lib/minikafka/data \
    PYTHONUNBUFFERED=1

# Numeric, so Kubernetes' runAsNonRoot can verify it without reading /etc/passwd.
USER ${UID}:${GID}
WORKDIR /var/lib/minikafka
VOLUME ["/var/lib/minikafka"]
EXPOSE 9092

# An ApiVersions round trip to the first listener on loopback; exit 0 healthy, 1 not.
# Exec form, and no argument holds a space: podman's Docker-compatible API splits on them.
HEALTHCHECK --interval=5s --timeout=3s --start-period=10s --retries=3 \
    CMD ["minikafka", "health"]

# Exec form: the broker is PID 1 and gets docker stop's SIGTERM itself, finishes requests
# in flight, writes snapshots and exits (well inside Docker's 10 s grace period).
STOPSIGNAL SIGTERM
ENTRYPOINT ["minikafka"]
CMD []
