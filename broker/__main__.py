"""``python -m broker``: the minikafka command line."""

from broker.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
