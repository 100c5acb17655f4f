"""KIP-1071 streams groups: members, their topology, task assignment (Kafka 4.4.0's)."""
