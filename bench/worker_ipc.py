"""What a trip to a validation worker costs the sender (issue 19): ``python -m bench.worker_ipc``.

One 64 KiB batch per round trip to a child process that answers 100 bytes, as
broker.produce.validation_pool does, two ways: the bytes through a Unix socket pair, or copied into
a shared memfd slot with a 16-byte notice. Prints the sender's CPU (process_time) and the
wall time per round trip; the sender's CPU is what the event loop pays.
"""

from __future__ import annotations

import mmap
import os
import socket
import sys
import time

BATCH = 64 * 1024
ROUND_TRIPS = 3000


def _child(sock: socket.socket, shared: mmap.mmap | None) -> None:
    buf = bytearray(BATCH)
    view = memoryview(buf)
    while True:
        if shared is None:
            got = 0
            while got < BATCH:
                n = sock.recv_into(view[got:], BATCH - got)
                if n == 0:
                    return
                got += n
        else:
            if not sock.recv(16):
                return
            buf[:16] = shared[:16]  # read from the slot
        sock.sendall(b"r" * 100)


def measure(shared_memory: bool) -> tuple[float, float]:
    """Sender CPU and wall time per round trip, in microseconds."""
    data = os.urandom(BATCH)
    ours, theirs = socket.socketpair()
    for end in (ours, theirs):
        end.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
        end.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    shared = None
    if shared_memory:
        fd = os.memfd_create("bench-ipc")
        os.ftruncate(fd, BATCH)
        shared = mmap.mmap(fd, BATCH)
        os.close(fd)
    pid = os.fork()
    if pid == 0:
        ours.close()
        _child(theirs, shared)
        os._exit(0)
    theirs.close()
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(ROUND_TRIPS):
        if shared is None:
            ours.sendall(data)
        else:
            shared[:BATCH] = data
            ours.sendall(b"x" * 16)
        answer = ours.recv(100)
        while len(answer) < 100:
            answer += ours.recv(100 - len(answer))
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    ours.close()
    os.waitpid(pid, 0)
    return cpu / ROUND_TRIPS * 1e6, wall / ROUND_TRIPS * 1e6


def main() -> int:
    for name, shared in (("socket", False), ("shared memfd slot", True)):
        cpu, wall = measure(shared)
        print(f"{name}: sender CPU {cpu:.1f} us, wall {wall:.1f} us per 64 KiB round trip")
    return 0


if __name__ == "__main__":
    sys.exit(main())
