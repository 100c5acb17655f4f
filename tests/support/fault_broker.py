"""A broker process with its fault-injection control plane open, for e2e tests."""

from __future__ import annotations

import re
from pathlib import Path

from broker.toolkit.fault_cli import FaultClient
from tests.support.broker_process import BrokerProcess

CONTROL_LINE = r"control plane on (http://[^/\s]+)/v1/"


class FaultBroker(BrokerProcess):
    """``BrokerProcess`` plus ``faults`` (a FaultClient on its control plane)."""

    def __init__(self, data_dir: Path, overrides: dict[str, str] | None = None) -> None:
        super().__init__(
            data_dir, {"minikafka.control.listener": "127.0.0.1:0", **(overrides or {})}
        )
        self.control_url = ""
        self.faults = FaultClient()

    def start(self, timeout: float = 20.0) -> FaultBroker:
        super().start(timeout)
        match = re.search(CONTROL_LINE, self.wait_for_log(CONTROL_LINE))
        assert match is not None
        self.control_url = match.group(1)
        self.faults = FaultClient(self.control_url, data_dir=self.data_dir)
        return self
