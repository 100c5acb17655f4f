"""Which node of a simulated cluster the request being served reached.

Set by the group and transaction handlers before they call their coordinator, read by the
coordinator's first check of a group request (NOT_COORDINATOR off the coordinator's node):
a connection belongs to one node, so the value its task carries is always its own.
"""

from __future__ import annotations

from contextvars import ContextVar

# -1: not a request of a cluster's node (a single broker, the console, a timer).
REQUEST_NODE: ContextVar[int] = ContextVar("request_node", default=-1)

# The node whose view the request being served sees (every request of a cluster's node;
# set before the handler runs): an isolated node answers from the view it had when it lost
# the controller (broker.cluster.state.Cluster.isolate).
VIEWING_NODE: ContextVar[int] = ContextVar("viewing_node", default=-1)
