#!/usr/bin/env python3
"""A bulk TCP flow for the namespace tests: real Linux TCP (cubic, reno or bbr) sharing a
bottleneck with a pgmcc session.

  tcp-flow.py sink ADDR PORT COUNT_FILE   accept one connection, read until EOF, and append
                                          "<monotonic s> <bytes so far>" to COUNT_FILE
                                          every 50 ms
  tcp-flow.py send ADDR PORT SECONDS [CC] send as fast as TCP allows for SECONDS, then
                                          print the namespace's TCP counters as one JSON
                                          line on standard error (also when stopped by
                                          SIGTERM)
                                          ({"linux_tcp": {"TCPTimeouts": N, ...}}):
                                          the flow's own where it is alone in its namespace,
                                          as in `pgmcc emu`
"""
import json
import signal
import socket
import sys
import time

# Counters of /proc/net/snmp (Tcp) and /proc/net/netstat (TcpExt) worth comparing with the
# simulator's TCP: segments, retransmissions and how each loss was recovered.
COUNTERS = (
    "OutSegs",
    "RetransSegs",
    "TCPTimeouts",
    "TCPLossProbes",
    "TCPSackRecovery",
    "TCPRenoRecovery",
    "TCPFastRetrans",
    "TCPSpuriousRTOs",
    "TCPLostRetransmit",
)


def tcp_counters():
    """The namespace's TCP counters named in COUNTERS (absent ones left out)."""
    found = {}
    for path in ("/proc/net/snmp", "/proc/net/netstat"):
        try:
            lines = open(path).read().splitlines()
        except OSError:
            continue
        for names, values in zip(lines[::2], lines[1::2]):
            proto, names = names.split(":", 1)
            _, values = values.split(":", 1)
            if proto in ("Tcp", "TcpExt"):
                for n, v in zip(names.split(), values.split()):
                    if n in COUNTERS:
                        found[n] = int(v)
    return found


def sink(addr, port, count_file):
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((addr, int(port)))
    srv.listen(1)
    conn, _ = srv.accept()
    total = 0
    last = 0.0

    out = open(count_file, "a", buffering=1)

    def record():
        out.write(f"{time.monotonic():.6f} {total}\n")

    record()
    while True:
        data = conn.recv(1 << 16)
        if not data:
            break
        total += len(data)
        now = time.monotonic()
        if now - last >= 0.05:
            record()
            last = now
    record()


def send(addr, port, seconds, cc=None):
    def stop(_signum, _frame):
        raise SystemExit(0)

    # Stopped early (the emulation's end): the counters are still printed.
    signal.signal(signal.SIGTERM, stop)
    try:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if cc:
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
        for _ in range(50):
            try:
                s.connect((addr, int(port)))
                break
            except ConnectionRefusedError:
                time.sleep(0.1)
        buf = b"\0" * (1 << 16)
        end = time.monotonic() + float(seconds)
        while time.monotonic() < end:
            s.send(buf)
        s.close()
    finally:
        print(json.dumps({"linux_tcp": tcp_counters()}), file=sys.stderr, flush=True)


if __name__ == "__main__":
    if len(sys.argv) >= 5 and sys.argv[1] == "sink":
        sink(*sys.argv[2:5])
    elif len(sys.argv) >= 5 and sys.argv[1] == "send":
        send(*sys.argv[2:6])
    else:
        sys.exit(__doc__)
