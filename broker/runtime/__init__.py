"""The event loop's helpers: work on threads, fsync scheduling, rate-limited logs,
start-up error messages."""
