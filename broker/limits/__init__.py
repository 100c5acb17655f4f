"""What clients may hold: connection quotas, the request budget, reused frame buffers."""
