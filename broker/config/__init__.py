"""Configuration: Kafka's property names, their table, loading and checks; topic, group
and broker configs as DescribeConfigs shows them."""
