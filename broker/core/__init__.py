"""The one owner of broker state, the request context and the dispatcher every request passes."""
