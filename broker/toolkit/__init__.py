"""The test toolkit: fault injection, its control plane, the embedded broker and the host
that survives crashes."""
