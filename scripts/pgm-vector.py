#!/usr/bin/env python3
"""Write annotated PGM golden vectors, filling in the checksum independently of the Rust code.

Each vector is written by hand below as (hex, comment) lines following the RFC 3208 figures
and OpenPGM's packet.h structs; this script only computes the RFC 1071 ones'-complement
checksum over the packet (checksum field taken as zero, a result of 0 sent as 0xffff) and
writes crates/pgm-wire/tests/vectors/<name>.hex. Run it again to regenerate; the files are
the source of truth for the tests.
"""
import pathlib
import sys

OUT = pathlib.Path(__file__).resolve().parent.parent / "crates/pgm-wire/tests/vectors"


def csum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    s = sum(int.from_bytes(data[i:i + 2], "big") for i in range(0, len(data), 2))
    while s > 0xFFFF:
        s = (s & 0xFFFF) + (s >> 16)
    c = ~s & 0xFFFF
    return 0xFFFF if c == 0 else c


def header(sport, dport, ptype, opts, tsdu, comment):
    return [
        (f"{sport:04x}", f"sport {sport}"),
        (f"{dport:04x}", f"dport {dport}"),
        (f"{ptype:02x}", f"type 0x{ptype:02x} ({comment})"),
        (f"{opts:02x}", f"options 0x{opts:02x}"),
        ("CSUM", "checksum (RFC 1071 over the whole packet, computed by scripts/pgm-vector.py)"),
        ("010203040506", "GSI 1.2.3.4.5.6"),
        (f"{tsdu:04x}", f"TSDU length {tsdu}"),
    ]


def write(name, source, lines):
    raw = bytes.fromhex("".join(h.replace("CSUM", "0000") for h, _ in lines))
    c = csum(raw)
    out = [f"# {name}: {source}", "# one field per line; '#' starts a comment"]
    for h, comment in lines:
        h = h.replace("CSUM", f"{c:04x}")
        out.append(f"{h:<40} # {comment}")
    (OUT / f"{name}.hex").write_text("\n".join(out) + "\n")
    print(f"{name}: {len(raw)} bytes, checksum 0x{c:04x}")


SRC = "c0000201"  # 192.0.2.1   source NLA (documentation range)
GRP = "efc00001"  # 239.192.0.1 group NLA
RX = "c0000263"  # 192.0.2.99  receiver NLA
SP, DP = 40000, 7500

VECTORS = {
    "spm": ("RFC 3208 §8.1 figure; OpenPGM struct pgm_spm", header(SP, DP, 0x00, 0x00, 0, "SPM") + [
        ("00000001", "spm_sqn 1"), ("00000000", "trail 0"), ("00000009", "lead 9"),
        ("0001", "NLA AFI 1 (IPv4)"), ("0000", "reserved"), (SRC, "path NLA 192.0.2.1"),
    ]),
    "spm-fin": ("RFC 3208 §8.1 + §9.7 OPT_FIN (sent on session close)", header(SP, DP, 0x00, 0x01, 0, "SPM") + [
        ("00000007", "spm_sqn 7"), ("00000003", "trail 3"), ("00000020", "lead 32"),
        ("0001", "NLA AFI 1"), ("0000", "reserved"), (SRC, "path NLA 192.0.2.1"),
        ("00 04 0008", "OPT_LENGTH len 4, total 8"),
        ("8e 04 00 00", "OPT_FIN|OPT_END, len 4, flags 0, reserved"),
    ]),
    "poll": ("RFC 3208 §14.7.1 figure; OpenPGM struct pgm_poll", header(SP, DP, 0x01, 0x00, 0, "POLL") + [
        ("00000005", "poll_sqn 5"), ("0002", "round 2"), ("0000", "s_type 0 (general)"),
        ("0001", "NLA AFI 1"), ("0000", "reserved"), (SRC, "path NLA 192.0.2.1"),
        ("000186a0", "back-off interval 100000 us"), ("deadbeef", "random string"),
        ("000000ff", "matching bit-mask"),
    ]),
    "polr": ("RFC 3208 §14.7.2 figure; upstream, ports swapped", header(DP, SP, 0x02, 0x00, 0, "POLR") + [
        ("00000005", "polr_sqn 5"), ("0002", "round 2"), ("0000", "reserved"),
    ]),
    "odata": ("RFC 3208 §8.2 figure; OpenPGM struct pgm_data", header(SP, DP, 0x04, 0x00, 5, "ODATA") + [
        ("0000000a", "data_sqn 10"), ("00000000", "trail 0"), ("68656c6c6f", "payload 'hello'"),
    ]),
    "odata-frag-pgmcc": ("RFC 3208 §9.2 OPT_FRAGMENT; OpenPGM struct pgm_opt_pgmcc_data (code 0x12)",
                         header(SP, DP, 0x04, 0x01, 4, "ODATA") + [
        ("00000011", "data_sqn 17"), ("0000000c", "trail 12"),
        ("00 04 0024", "OPT_LENGTH len 4, total 36"),
        ("01 10 00 00", "OPT_FRAGMENT len 16, flags 0, reserved"),
        ("00000010", "first sqn 16"), ("000005b4", "offset 1460"), ("000005b8", "APDU length 1464"),
        ("92 10 00 00", "OPT_PGMCC_DATA|OPT_END len 16, flags 0, reserved"),
        ("0001e240", "tstamp 123456 ms"), ("0001", "AFI 1"), ("0000", "reserved"),
        (RX, "acker NLA 192.0.2.99"),
        ("74657374", "payload 'test' (last 4 bytes of the APDU)"),
    ]),
    "rdata": ("RFC 3208 §8.2; same layout as ODATA", header(SP, DP, 0x05, 0x00, 3, "RDATA") + [
        ("0000000a", "data_sqn 10"), ("00000002", "trail 2"), ("616263", "payload 'abc'"),
    ]),
    "nak-list": ("RFC 3208 §8.3 + §9.3 OPT_NAK_LIST (network-significant: OPT_NETWORK set)",
                 header(DP, SP, 0x08, 0x03, 0, "NAK") + [
        ("0000000b", "nak_sqn 11"), ("0001", "source NLA AFI 1"), ("0000", "reserved"), (SRC, "source NLA"),
        ("0001", "group NLA AFI 1"), ("0000", "reserved"), (GRP, "group NLA 239.192.0.1"),
        ("00 04 0010", "OPT_LENGTH len 4, total 16"),
        ("82 0c 00 00", "OPT_NAK_LIST|OPT_END len 12, flags 0, reserved"),
        ("0000000c", "sqn 12"), ("0000000e", "sqn 14"),
    ]),
    "nnak": ("RFC 3208 §8.3; NNAK has the NAK layout", header(DP, SP, 0x09, 0x00, 0, "NNAK") + [
        ("0000000b", "nak_sqn 11"), ("0001", "AFI 1"), ("0000", "reserved"), (SRC, "source NLA"),
        ("0001", "AFI 1"), ("0000", "reserved"), (GRP, "group NLA"),
    ]),
    "ncf": ("RFC 3208 §8.3; NCF is downstream (ports not swapped)", header(SP, DP, 0x0a, 0x00, 0, "NCF") + [
        ("0000000b", "nak_sqn 11"), ("0001", "AFI 1"), ("0000", "reserved"), (SRC, "source NLA"),
        ("0001", "AFI 1"), ("0000", "reserved"), (GRP, "group NLA"),
    ]),
    "nak-ipv6": ("RFC 3208 §8.3 with IPv6 NLAs (OpenPGM struct pgm_nak6)", header(DP, SP, 0x08, 0x00, 0, "NAK") + [
        ("00000064", "nak_sqn 100"), ("0002", "source NLA AFI 2 (IPv6)"), ("0000", "reserved"),
        ("20010db8000000000000000000000001", "source NLA 2001:db8::1"),
        ("0002", "group NLA AFI 2"), ("0000", "reserved"),
        ("ff0e0000000000000000000000000123", "group NLA ff0e::123"),
    ]),
    "spmr": ("RFC 3208 §13.6: SPMR has no type-specific header", header(DP, SP, 0x0c, 0x00, 0, "SPMR")),
    "ack": ("OpenPGM struct pgm_ack (type 0x0d) + struct pgm_opt_pgmcc_feedback (code 0x13)",
            header(DP, SP, 0x0d, 0x01, 0, "ACK") + [
        ("00000020", "RX_MAX 32"), ("fffffffd", "bitmap: all received but RX_MAX-1"),
        ("00 04 0014", "OPT_LENGTH len 4, total 20"),
        ("93 10 00 00", "OPT_PGMCC_FEEDBACK|OPT_END len 16, flags 0, reserved"),
        ("0001e258", "tstamp 123480 ms"), ("0001", "AFI 1"), ("028f", "loss_rate 655 (~1%)"),
        (RX, "receiver NLA 192.0.2.99"),
    ]),
    "nak-join-unknown": ("RFC 3208 §9.4 OPT_JOIN and §9 unknown option (OPX=01) kept verbatim",
                         header(DP, SP, 0x08, 0x01, 0, "NAK") + [
        ("00000003", "nak_sqn 3"), ("0001", "AFI 1"), ("0000", "reserved"), (SRC, "source NLA"),
        ("0001", "AFI 1"), ("0000", "reserved"), (GRP, "group NLA"),
        ("00 04 0012", "OPT_LENGTH len 4, total 18"),
        ("03 08 00 00", "OPT_JOIN len 8, flags 0, reserved"), ("00000002", "join_min sqn 2"),
        ("a0 06 01", "unknown code 0x20|OPT_END len 6, flags OPX=01 (invalidate)"), ("00abcd", "option data (3 bytes after the option header)"),
    ]),
}

if __name__ == "__main__":
    OUT.mkdir(parents=True, exist_ok=True)
    names = sys.argv[1:] or list(VECTORS)
    for n in names:
        src, lines = VECTORS[n]
        write(n, src, lines)
