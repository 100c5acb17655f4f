"""The web console, /metrics, /health and /ready (minikafka.console.listener)."""
