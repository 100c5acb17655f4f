"""Fetch sessions (KIP-227) and the purgatory where fetches wait for data."""
