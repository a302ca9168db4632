/*
 * Shared setup for pgm-send and pgm-recv: one libpgm socket over UDP encapsulation, or raw
 * IP protocol 113 with --ip (root).
 *
 * Both tools speak a tiny stream format so that a receiver knows when it is done without
 * relying on libpgm's session end (5.3.128 sends SPM+OPT_FIN on pgm_close but never reports
 * it to the receiving application): the first APDU is a 16-byte header
 *   "PGMI" | u32 version (1) | u64 payload length      (all big-endian)
 * and the payload follows in APDUs of at most --msg-size bytes.
 */
#ifndef PGMI_COMMON_H
#define PGMI_COMMON_H

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <pgm/pgm.h>

#define PGMI_MAGIC "PGMI"
#define PGMI_VERSION 1u
#define PGMI_HEADER_LEN 16u

struct pgmi_opts {
	const char *network;  /* libpgm network string, e.g. "veth0;239.192.0.1" */
	int dport;            /* PGM data-destination port */
	int sport;            /* PGM source port (TSI), 0 = random */
	int ucast_port;       /* UDP port for unicast upstream (NAK, ACK, SPMR) */
	int mcast_port;       /* UDP port for multicast (SPM, ODATA, RDATA, NCF) */
	int hops;             /* multicast TTL */
	int loop;             /* IP_MULTICAST_LOOP */
	int mtu;              /* max TPDU including IP and UDP headers */
	bool pgmcc;           /* enable PGMCC (PGM_USE_PGMCC) */
	bool ip;              /* raw IP protocol 113 instead of UDP encapsulation */
	const char *gsi_text; /* GSI is MD5 of this text; NULL = from hostname */
	bool verbose;
};

static inline void pgmi_defaults(struct pgmi_opts *o)
{
	memset(o, 0, sizeof *o);
	o->network = ";239.192.0.1";
	o->dport = 7500;
	o->ucast_port = 3056; /* same as mcast: a libpgm source only listens on the mcast port */
	o->mcast_port = 3056;
	o->hops = 1;
	o->loop = 0;
	o->mtu = 1500;
}

static inline void pgmi_die_err(const char *what, pgm_error_t *err)
{
	fprintf(stderr, "%s: %s\n", what, err && err->message ? err->message : "failed");
	if (err)
		pgm_error_free(err);
	exit(2);
}

#define PGMI_SET(sock, opt, val)                                                          \
	do {                                                                              \
		const int v_ = (val);                                                     \
		if (!pgm_setsockopt((sock), IPPROTO_PGM, (opt), &v_, sizeof v_)) {        \
			fprintf(stderr, "pgm_setsockopt(%s) failed\n", #opt);             \
			exit(2);                                                          \
		}                                                                         \
	} while (0)

static inline uint64_t pgmi_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Parse "--name value" style common options; returns the number of argv slots used (0 if
 * the option is not a common one). */
static inline int pgmi_parse_common(struct pgmi_opts *o, int argc, char **argv, int i)
{
	const char *a = argv[i];
	const char *v = (i + 1 < argc) ? argv[i + 1] : NULL;
#define NEEDV() do { if (!v) { fprintf(stderr, "%s needs a value\n", a); exit(2); } } while (0)
	if (!strcmp(a, "--network") || !strcmp(a, "-n")) { NEEDV(); o->network = v; return 2; }
	if (!strcmp(a, "--dport")) { NEEDV(); o->dport = atoi(v); return 2; }
	if (!strcmp(a, "--sport")) { NEEDV(); o->sport = atoi(v); return 2; }
	if (!strcmp(a, "--port")) { NEEDV(); o->ucast_port = o->mcast_port = atoi(v); return 2; }
	if (!strcmp(a, "--ucast-port")) { NEEDV(); o->ucast_port = atoi(v); return 2; }
	if (!strcmp(a, "--mcast-port")) { NEEDV(); o->mcast_port = atoi(v); return 2; }
	if (!strcmp(a, "--hops")) { NEEDV(); o->hops = atoi(v); return 2; }
	if (!strcmp(a, "--mtu")) { NEEDV(); o->mtu = atoi(v); return 2; }
	if (!strcmp(a, "--gsi")) { NEEDV(); o->gsi_text = v; return 2; }
	if (!strcmp(a, "--loop")) { o->loop = 1; return 1; }
	if (!strcmp(a, "--pgmcc")) { o->pgmcc = true; return 1; }
	if (!strcmp(a, "--ip")) { o->ip = true; return 1; }
	if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) { o->verbose = true; return 1; }
#undef NEEDV
	return 0;
}

#define PGMI_COMMON_USAGE                                                                    \
	"  -n, --network NET   libpgm network string \"IFACE;GROUP\" (default \";239.192.0.1\")\n" \
	"      --dport N       PGM data-destination port (default 7500)\n"                      \
	"      --sport N       PGM source port of our TSI (default random)\n"                   \
	"      --port N        UDP encapsulation port for both unicast and multicast (3056)\n"  \
	"      --ucast-port N  UDP port for unicast upstream NAK/ACK/SPMR (default 3056)\n"     \
	"      --mcast-port N  UDP port for multicast SPM/ODATA/RDATA/NCF (default 3056)\n"     \
	"      --hops N        multicast TTL (default 1)\n"                                     \
	"      --loop          enable multicast loopback (off by default)\n"                    \
	"      --mtu N         max TPDU incl. IP+UDP headers (default 1500)\n"                  \
	"      --gsi TEXT      GSI = first 6 bytes of MD5(TEXT) (default: from hostname)\n"     \
	"      --pgmcc         enable PGMCC congestion control (PGM_USE_PGMCC)\n"               \
	"      --ip            raw IP protocol 113, not UDP encapsulation (needs root)\n"      \
	"  -v, --verbose       libpgm log level NORMAL instead of WARNING\n"

/* Create, configure (role-specific options via the callback), bind, join and connect. */
static inline pgm_sock_t *pgmi_open(const struct pgmi_opts *o, bool sender,
				    void (*role_opts)(pgm_sock_t *, const void *), const void *ctx)
{
	pgm_error_t *err = NULL;
	struct pgm_addrinfo_t *res = NULL;
	struct pgm_addrinfo_t hints;
	pgm_sock_t *sock = NULL;

	if (!pgm_init(&err))
		pgmi_die_err("pgm_init", err);
	/* libpgm's own PGM_MIN_LOG_LEVEL / PGM_LOG_MASK (read by pgm_init) win when set,
	 * e.g. PGM_MIN_LOG_LEVEL=TRACE PGM_LOG_MASK=0xffff for protocol traces */
	if (!getenv("PGM_MIN_LOG_LEVEL"))
		pgm_min_log_level = o->verbose ? PGM_LOG_LEVEL_NORMAL : PGM_LOG_LEVEL_WARNING;

	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_INET;
	if (!pgm_getaddrinfo(o->network, &hints, &res, &err))
		pgmi_die_err("pgm_getaddrinfo", err);

	if (!pgm_socket(&sock, AF_INET, SOCK_SEQPACKET, o->ip ? IPPROTO_PGM : IPPROTO_UDP, &err))
		pgmi_die_err("pgm_socket", err);

	if (!o->ip) {
		PGMI_SET(sock, PGM_UDP_ENCAP_UCAST_PORT, o->ucast_port);
		PGMI_SET(sock, PGM_UDP_ENCAP_MCAST_PORT, o->mcast_port);
	}
	PGMI_SET(sock, PGM_MTU, o->mtu);
	if (sender) {
		PGMI_SET(sock, PGM_SEND_ONLY, 1);
	} else {
		PGMI_SET(sock, PGM_RECV_ONLY, 1);
		PGMI_SET(sock, PGM_PASSIVE, 0);
	}
	if (o->pgmcc) {
		/* values of OpenPGM's own examples: ACK back-off 50 ms, C = 75, C' = 500 */
		struct pgm_pgmccinfo_t cc = {
			.ack_bo_ivl = pgm_msecs(50),
			.ack_c = 75,
			.ack_c_p = 500,
		};
		if (!pgm_setsockopt(sock, IPPROTO_PGM, PGM_USE_PGMCC, &cc, sizeof cc)) {
			fprintf(stderr, "pgm_setsockopt(PGM_USE_PGMCC) failed\n");
			exit(2);
		}
	}
	role_opts(sock, ctx);

	struct pgm_sockaddr_t addr;
	memset(&addr, 0, sizeof addr);
	addr.sa_port = (uint16_t)o->dport;
	addr.sa_addr.sport = (uint16_t)o->sport;
	bool gsi_ok = o->gsi_text
		? pgm_gsi_create_from_data(&addr.sa_addr.gsi, (const uint8_t *)o->gsi_text,
					   strlen(o->gsi_text))
		: pgm_gsi_create_from_hostname(&addr.sa_addr.gsi, &err);
	if (!gsi_ok)
		pgmi_die_err("creating GSI", err);

	struct pgm_interface_req_t if_req;
	memset(&if_req, 0, sizeof if_req);
	if_req.ir_interface = res->ai_recv_addrs[0].gsr_interface;
	if (!pgm_bind3(sock, &addr, sizeof addr, &if_req, sizeof if_req, &if_req, sizeof if_req,
		       &err))
		pgmi_die_err("pgm_bind3", err);

	for (unsigned i = 0; i < res->ai_recv_addrs_len; i++) {
		if (!pgm_setsockopt(sock, IPPROTO_PGM, PGM_JOIN_GROUP, &res->ai_recv_addrs[i],
				    sizeof(struct group_req))) {
			fprintf(stderr, "PGM_JOIN_GROUP failed\n");
			exit(2);
		}
	}
	if (!pgm_setsockopt(sock, IPPROTO_PGM, PGM_SEND_GROUP, &res->ai_send_addrs[0],
			    sizeof(struct group_req))) {
		fprintf(stderr, "PGM_SEND_GROUP failed\n");
		exit(2);
	}
	pgm_freeaddrinfo(res);

	PGMI_SET(sock, PGM_MULTICAST_LOOP, o->loop);
	PGMI_SET(sock, PGM_MULTICAST_HOPS, o->hops);
	PGMI_SET(sock, PGM_NOBLOCK, 1);

	if (!pgm_connect(sock, &err))
		pgmi_die_err("pgm_connect", err);

	if (o->verbose) {
		struct pgm_sockaddr_t name;
		socklen_t len = sizeof name;
		if (pgm_getsockname(sock, &name, &len))
			fprintf(stderr, "tsi %s dport %u\n", pgm_tsi_print(&name.sa_addr),
				(unsigned)ntohs(name.sa_port));
	}
	return sock;
}

/* Wait for the socket's readable fds (plus `extra` if >= 0) until readable or `max_ms`, or
 * less if libpgm has a timer due sooner. */
static inline void pgmi_wait(pgm_sock_t *sock, int max_ms, int extra_fd)
{
	struct pollfd fds[8];
	int n = 6;
	memset(fds, 0, sizeof fds);
	pgm_poll_info(sock, fds, &n, POLLIN);
	if (extra_fd >= 0 && n < 8) {
		fds[n].fd = extra_fd;
		fds[n].events = POLLIN;
		n++;
	}
	int timeout = max_ms;
	struct timeval tv;
	socklen_t optlen = sizeof tv;
	if (pgm_getsockopt(sock, IPPROTO_PGM, PGM_TIME_REMAIN, &tv, &optlen)) {
		const long ms = tv.tv_sec * 1000L + (tv.tv_usec + 999) / 1000;
		if (ms >= 0 && ms < timeout)
			timeout = (int)ms;
	}
	poll(fds, (nfds_t)n, timeout);
}

#endif
