"""``python -m broker``: the minikafka command line."""

import gc

# Off while the command line's modules are imported: see broker.cli.imported_without_gc.
gc.disable()
try:
    from broker.cli import main
finally:
    gc.enable()

if __name__ == "__main__":
    raise SystemExit(main())
