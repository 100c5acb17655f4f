"""minikafka's public API for testing Kafka code: an in-process broker and fault injection.

    async with minikafka.Broker(num_partitions=3) as broker:
        ...  # point any Kafka client at broker.bootstrap
        broker.faults.error("Produce", "NOT_LEADER_OR_FOLLOWER", count=2)

The pytest plugin (``minikafka.pytest_plugin``, registered as a ``pytest11`` entry point)
gives each test a clean broker: fixtures ``kafka_broker``, ``kafka_bootstrap``,
``kafka_topic`` and ``kafka_session_broker``. See docs/TESTING_WITH_MINIKAFKA.md.
"""

from broker import __version__
from broker.toolkit.embedded import Broker, ThreadedBroker
from broker.toolkit.fault_cli import FaultClient
from broker.toolkit.faults import FaultError, FaultInjector

__all__ = [
    "Broker",
    "FaultClient",
    "FaultError",
    "FaultInjector",
    "ThreadedBroker",
    "__version__",
]
