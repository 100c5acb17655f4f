"""Stand-in for kafka-python's test/service.py, which its sdist leaves out.

Written for minikafka's peer-test runner (tests/peer/run_kafka_python.py), which copies
it into the unpacked sdist as test/service.py. With KAFKA_URI set, the suite's
KafkaFixture wraps the running broker in an ExternalService and only calls stop() and
dump_logs() on it; SpawnedService (Kafka's own scripts from a Kafka distribution) is
needed only by fixtures that start their own broker, which this runner does not offer.
"""


class ExternalService:
    """A broker someone else started: nothing to start, stop or read logs from."""

    def __init__(self, host, port):
        self.host = host
        self.port = port

    def start(self):
        pass

    def stop(self):
        pass

    def dump_logs(self):
        pass

    def wait_for(self, pattern, timeout=30):
        return True


class SpawnedService:
    """Refuses: spawning Kafka needs a Kafka distribution, which minikafka's CI has not."""

    def __init__(self, *args, **kwargs):
        raise RuntimeError(
            "this fixture starts its own Kafka from a Kafka distribution; "
            "minikafka's peer-test runner only offers an external broker (KAFKA_URI)"
        )
