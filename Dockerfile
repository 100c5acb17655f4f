# minikafka: a Kafka broker in Python, as a drop-in for the apache/kafka image.
#   docker build -t minikafka .
#   docker run -p 127.0.0.1:9092:9092 -p 127.0.0.1:8080:8080 minikafka
# The web console and Prometheus metrics: http://localhost:8080/ and /metrics.
# Configuration: KAFKA_* environment variables named as the apache/kafka image names them
# (KAFKA_LISTENERS, KAFKA_ADVERTISED_LISTENERS, KAFKA_NUM_PARTITIONS, ...), a properties file
# given as the first argument, or --override name=value arguments.
# A SASL_SSL listener next to PLAINTEXT, with certificates mounted read-only (broker.pem: the
# PEM key and certificate chain; see docker/make-certs.sh and docker-compose.yml):
#   docker run -p 127.0.0.1:9092:9092 -p 127.0.0.1:9093:9093 \
#     -v "$PWD/certs:/etc/minikafka/certs:ro" \
#     -e KAFKA_LISTENERS=PLAINTEXT://0.0.0.0:9092,SECURE://0.0.0.0:9093 \
#     -e KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://localhost:9092,SECURE://localhost:9093 \
#     -e KAFKA_LISTENER_SECURITY_PROTOCOL_MAP=PLAINTEXT:PLAINTEXT,SECURE:SASL_SSL \
#     -e KAFKA_LISTENER_NAME_SECURE_SSL_KEYSTORE_TYPE=PEM \
#     -e KAFKA_LISTENER_NAME_SECURE_SSL_KEYSTORE_LOCATION=/etc/minikafka/certs/broker.pem \
#     -e KAFKA_LISTENER_NAME_SECURE_SASL_ENABLED_MECHANISMS=PLAIN \
#     -e KAFKA_LISTENER_NAME_SECURE_PLAIN_SASL_JAAS_CONFIG='org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret";' \
#     minikafka

# ---- build: one wheel for minikafka, plus wheels of its dependencies --------------------
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md LICENSE ./
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
    && mkdir -p /var/lib/minikafka/data /etc/minikafka/certs \
    && chown -R minikafka:minikafka /var/lib/minikafka /etc/minikafka
COPY --from=build /install /usr/local

# The broker's own defaults bind loopback only; in a container it must listen on every
# interface. Clients are told localhost:9092, right for `docker run -p 9092:9092`; set
# KAFKA_ADVERTISED_LISTENERS to the name clients use (see docker-compose.yml).
# The console too: its clients come through Docker's port publishing, from the bridge's
# address, so it answers non-loopback peers; publish it on the host's loopback (-p
# 127.0.0.1:8080:8080). Its Host check still refuses names other than IPs and localhost.
ENV KAFKA_LISTENERS=PLAINTEXT://0.0.0.0:9092 \
    KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://localhost:9092 \
    KAFKA_MINIKAFKA_CONSOLE_LISTENER=http://0.0.0.0:8080 \
    KAFKA_MINIKAFKA_CONSOLE_ALLOW_REMOTE=true \
    KAFKA_LOG_DIRS=/var/lib/minikafka/data \
    PYTHONUNBUFFERED=1

# Numeric, so Kubernetes' runAsNonRoot can verify it without reading /etc/passwd.
USER ${UID}:${GID}
WORKDIR /var/lib/minikafka
VOLUME ["/var/lib/minikafka"]
# 9092: PLAINTEXT; 9093: the conventional port of a TLS/SASL listener, when configured;
# 8080: the console, /metrics, /health and /ready.
EXPOSE 9092 9093 8080

# An ApiVersions round trip to the first listener on loopback; exit 0 healthy, 1 not.
# Exec form, and no argument holds a space: podman's Docker-compatible API splits on them.
HEALTHCHECK --interval=5s --timeout=3s --start-period=10s --retries=3 \
    CMD ["minikafka", "health"]

# Exec form: the broker is PID 1 and gets docker stop's SIGTERM itself, finishes requests
# in flight, writes snapshots and exits (well inside Docker's 10 s grace period).
STOPSIGNAL SIGTERM
ENTRYPOINT ["minikafka"]
CMD []
