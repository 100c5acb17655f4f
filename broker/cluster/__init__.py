"""A simulated cluster of several nodes in one broker process (minikafka.cluster.size)."""
