"""Produce's batch checks in worker processes."""
