#!/usr/bin/env python3
"""Probes for validating `pgmcc emu`: run inside the emulated hosts' namespaces.

  emu-probe.py echo PORT SECONDS                     UDP echo server (bounded in time)
  emu-probe.py rtt ADDR PORT COUNT INTERVAL_MS       RTT samples to an echo server: JSON
  emu-probe.py blast ADDR PORT COUNT PPS SIZE        COUNT numbered UDP datagrams of SIZE
                                                     payload bytes, paced at PPS (unicast or
                                                     a group; multicast TTL 1)
  emu-probe.py count [GROUP:]PORT SECONDS            counts datagrams until SECONDS pass or
                                                     1 s of silence after the first: JSON

Every mode is bounded in packets and seconds. Prints JSON on one line where it measures.
"""

import json
import socket
import struct
import sys
import time


def echo(port, seconds):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", port))
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        s.settimeout(max(0.01, end - time.monotonic()))
        try:
            data, peer = s.recvfrom(2048)
        except socket.timeout:
            continue
        s.sendto(data, peer)


def rtt(addr, port, count, interval_ms):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(3.0)
    samples = []
    lost = 0
    for i in range(count):
        t0 = time.monotonic_ns()
        s.sendto(struct.pack("!Iq", i, t0), (addr, port))
        while True:
            try:
                data, _ = s.recvfrom(2048)
            except socket.timeout:
                lost += 1
                break
            seq, sent = struct.unpack("!Iq", data[:12])
            if seq == i:
                samples.append((time.monotonic_ns() - sent) / 1e6)
                break
        time.sleep(interval_ms / 1000.0)
    samples.sort()
    out = {"samples": len(samples), "lost": lost}
    if samples:
        out.update(min_ms=samples[0], median_ms=samples[len(samples) // 2], max_ms=samples[-1])
    print(json.dumps(out))


def blast(addr, port, count, pps, size):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
    pad = b"\0" * max(0, size - 4)
    start = time.monotonic()
    for i in range(count):
        due = start + i / pps
        now = time.monotonic()
        if due > now:
            time.sleep(due - now)
        while True:
            try:
                s.sendto(struct.pack("!I", i) + pad, (addr, port))
                break
            except BlockingIOError:
                time.sleep(0.0005)
            except OSError as e:  # ENOBUFS: the interface queue is full; wait and retry
                if e.errno != 105:
                    raise
                time.sleep(0.0005)
    print(json.dumps({"sent": count, "seconds": time.monotonic() - start}))


def count(spec, seconds):
    group, _, port = spec.rpartition(":")
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    s.bind(("0.0.0.0", int(port)))
    if group:
        mreq = struct.pack("4s4s", socket.inet_aton(group), socket.inet_aton("0.0.0.0"))
        s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, mreq)
    print(json.dumps({"listening": True}), flush=True)
    end = time.monotonic() + seconds
    seen = set()
    first = last = None
    nbytes = 0
    dups = 0
    while True:
        now = time.monotonic()
        if now >= end or (last is not None and now - last > 1.0):
            break
        s.settimeout(min(0.2, end - now))
        try:
            data = s.recv(65536)
        except socket.timeout:
            continue
        t = time.monotonic()
        first = t if first is None else first
        last = t
        nbytes += len(data)
        seq = struct.unpack("!I", data[:4])[0]
        if seq in seen:
            dups += 1
        seen.add(seq)
    span = (last - first) if first is not None else 0.0
    print(
        json.dumps(
            {
                "received": len(seen),
                "duplicates": dups,
                "bytes": nbytes,
                "first_to_last_s": span,
            }
        )
    )


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    mode, a = argv[1], argv[2:]
    if mode == "echo" and len(a) == 2:
        echo(int(a[0]), float(a[1]))
    elif mode == "rtt" and len(a) == 4:
        rtt(a[0], int(a[1]), int(a[2]), float(a[3]))
    elif mode == "blast" and len(a) == 5:
        blast(a[0], int(a[1]), int(a[2]), float(a[3]), int(a[4]))
    elif mode == "count" and len(a) == 2:
        count(a[0], float(a[1]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
