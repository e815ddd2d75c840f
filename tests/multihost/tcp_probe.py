#!/usr/bin/env python3
"""TCP round trips and bulk transfers between two fake hosts (run inside their namespaces).
Standard library only.

  tcp_probe.py serve PORT [SECONDS]     answer connections until SECONDS (default 120) have passed:
                                        "echo" connections get every byte back, "sink" connections
                                        get the SHA-256 and length of everything they sent,
                                        "drain" connections (no hashing) only the length
  tcp_probe.py rtt HOST PORT N          N round trips of 1 byte (TCP_NODELAY); prints JSON
                                        {"min_ms", "median_ms", "max_ms"}
  tcp_probe.py bulk HOST PORT BYTES     send BYTES random bytes, compare the server's SHA-256 and
                                        length with our own; prints JSON {"intact", "seconds",
                                        "mbit_s"}; exit 1 if they differ
  tcp_probe.py cpu HOST PORT SECONDS    the CPU cost of TCP between the hosts: stream zeros from one
                                        buffer for SECONDS to a "drain" connection, and count the
                                        machine's busy CPU time meanwhile (/proc/stat: user, nice,
                                        system, irq, softirq of every CPU) less the busy rate of a
                                        quiet second before; prints JSON {"bytes", "seconds",
                                        "mbit_s", "busy_cpu_s", "idle_cpu_s_per_s",
                                        "cpu_ns_per_byte"}: CPU time per byte sent or received by
                                        one host (both hosts run on this machine: the busy time
                                        over 2 x bytes)

The clients retry connecting for 10 s (the server may still be starting); every socket operation
times out after 60 s, so nothing waits forever."""
import hashlib
import json
import os
import socket
import statistics
import sys
import threading
import time

TIMEOUT = 60


def recv_exact(s, n):
    out = b""
    while len(out) < n:
        b = s.recv(n - len(out))
        if not b:
            raise ConnectionError("connection closed early")
        out += b
    return out


def handle(conn):
    with conn:
        conn.settimeout(TIMEOUT)
        kind = recv_exact(conn, 5)
        if kind == b"echo\n":
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            while b := conn.recv(65536):
                conn.sendall(b)
        elif kind == b"sink\n":
            h, n = hashlib.sha256(), 0
            while b := conn.recv(1 << 20):
                h.update(b)
                n += len(b)
            conn.sendall(f"{h.hexdigest()} {n}\n".encode())
        elif kind == b"drain":
            buf, n = bytearray(1 << 20), 0
            while k := conn.recv_into(buf):
                n += k
            conn.sendall(f"{n}\n".encode())


def serve(port, seconds):
    srv = socket.create_server(("0.0.0.0", port))
    srv.settimeout(1)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            conn, _ = srv.accept()
        except socket.timeout:
            continue
        threading.Thread(target=handle, args=(conn,), daemon=True).start()


def connect(host, port, kind):
    end = time.monotonic() + 10
    while True:
        try:
            s = socket.create_connection((host, port), timeout=TIMEOUT)
            break
        except OSError:
            if time.monotonic() > end:
                raise
            time.sleep(0.1)
    s.sendall(kind)
    return s


def rtt(host, port, n):
    s = connect(host, port, b"echo\n")
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    times = []
    for i in range(n + 1):
        t = time.perf_counter()
        s.sendall(b"x")
        recv_exact(s, 1)
        if i:  # the first round trip also warms up the path (ARP, slow start)
            times.append((time.perf_counter() - t) * 1e3)
    s.close()
    print(json.dumps({"min_ms": min(times), "median_ms": statistics.median(times), "max_ms": max(times)}))


def bulk(host, port, nbytes):
    data = os.urandom(nbytes)
    want = f"{hashlib.sha256(data).hexdigest()} {nbytes}"
    s = connect(host, port, b"sink\n")
    t = time.perf_counter()
    s.sendall(data)
    s.shutdown(socket.SHUT_WR)
    got = b""
    while b := s.recv(4096):
        got += b
    secs = time.perf_counter() - t
    ok = got.decode().strip() == want
    print(json.dumps({"intact": ok, "seconds": secs, "mbit_s": nbytes * 8 / secs / 1e6}))
    return 0 if ok else 1


def busy_cpu_s():
    """Busy CPU seconds of the whole machine so far (user + nice + system + irq + softirq)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (v[0] + v[1] + v[2] + v[5] + v[6]) / os.sysconf("SC_CLK_TCK")


def cpu(host, port, seconds):
    b0 = busy_cpu_s()
    time.sleep(1.0)
    idle_rate = busy_cpu_s() - b0  # what the machine burns without the transfer, per second
    s = connect(host, port, b"drain")
    buf = memoryview(bytearray(1 << 20))
    b0, t0, n = busy_cpu_s(), time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        s.sendall(buf)
        n += len(buf)
    s.shutdown(socket.SHUT_WR)
    got = b""
    while b := s.recv(4096):
        got += b
    secs, busy = time.perf_counter() - t0, busy_cpu_s() - b0
    if int(got.decode().strip()) != n:
        print(json.dumps({"error": f"sent {n} bytes, the server counted {got.decode().strip()}"}))
        return 1
    cost = max(busy - idle_rate * secs, 0.0)
    print(json.dumps({"bytes": n, "seconds": secs, "mbit_s": n * 8 / secs / 1e6, "busy_cpu_s": busy,
                      "idle_cpu_s_per_s": idle_rate, "cpu_ns_per_byte": cost / (2 * n) * 1e9}))
    return 0


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "serve":
        serve(int(args[0]), float(args[1]) if len(args) > 1 else 120)
    elif cmd == "rtt":
        rtt(args[0], int(args[1]), int(args[2]))
    elif cmd == "bulk":
        return bulk(args[0], int(args[1]), int(args[2]))
    elif cmd == "cpu":
        return cpu(args[0], int(args[1]), float(args[2]))
    else:
        sys.exit(__doc__)
    return 0


if __name__ == "__main__":
    sys.exit(main())
