"""Operator tools: dump (segments, indexes, snapshots) and health."""
