"""The socket server: accepting, one connection's frames, SASL exchanges, zero-copy sends."""
