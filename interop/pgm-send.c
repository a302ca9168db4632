/*
 * pgm-send: send a file, or N bytes of a deterministic pattern, to a PGM group with libpgm
 * over UDP encapsulation, then linger to serve repairs.
 *
 * A libpgm source only handles NAKs (sending NCF and RDATA), ACKs and its timers (SPM
 * heartbeats, PGMCC ACK expiry) from inside pgm_recv*(), so a second thread keeps calling
 * pgm_recv() for the whole life of the socket while the main thread sends.
 *
 * Prints "sent N bytes" on stdout. Exit status 0 on success, 2 on setup or send errors, 3 if
 * --deadline passed before the last byte was handed to libpgm.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <unistd.h>

#include "pgmi-common.h"

struct send_opts {
	long rate;      /* PGM_TXW_MAX_RTE bytes/s incl. IP+UDP headers, 0 = no limit */
	int txw_sqns;   /* transmit window in sequence numbers */
	int ambient_ms; /* PGM_AMBIENT_SPM */
};

static atomic_bool stop_service;
static pgm_sock_t *g_sock;
static uint64_t g_deadline_us; /* 0 = none */

static void role_opts(pgm_sock_t *sock, const void *ctx)
{
	const struct send_opts *s = ctx;
	/* heartbeat SPMs after data: fast at first so receivers see the lead soon, then slower */
	const int heartbeat[] = {pgm_msecs(100), pgm_msecs(100), pgm_msecs(100),
				 pgm_msecs(100), pgm_msecs(1300), pgm_secs(7),
				 pgm_secs(16), pgm_secs(25), pgm_secs(30)};
	PGMI_SET(sock, PGM_TXW_SQNS, s->txw_sqns);
	PGMI_SET(sock, PGM_AMBIENT_SPM, pgm_msecs(s->ambient_ms));
	if (!pgm_setsockopt(sock, IPPROTO_PGM, PGM_HEARTBEAT_SPM, heartbeat, sizeof heartbeat)) {
		fprintf(stderr, "pgm_setsockopt(PGM_HEARTBEAT_SPM) failed\n");
		exit(2);
	}
	if (s->rate > 0)
		PGMI_SET(sock, PGM_TXW_MAX_RTE, (int)s->rate);
}

/* Runs libpgm's receive path: NAK -> NCF + RDATA, ACK -> PGMCC tokens, SPM timers. */
static void *service(void *arg)
{
	(void)arg;
	char buf[4096];
	while (!atomic_load(&stop_service)) {
		size_t got = 0;
		pgm_error_t *err = NULL;
		const int st = pgm_recv(g_sock, buf, sizeof buf, 0, &got, &err);
		if (err) {
			fprintf(stderr, "pgm_recv: %s\n", err->message);
			pgm_error_free(err);
		}
		if (st == PGM_IO_STATUS_NORMAL || st == PGM_IO_STATUS_RESET)
			continue;
		pgmi_wait(g_sock, 50, -1);
	}
	return NULL;
}

/* Send one APDU, waiting out rate limits, full socket buffers and PGMCC congestion. */
static void send_apdu(const void *buf, size_t len)
{
	for (;;) {
		if (g_deadline_us && pgmi_now_us() > g_deadline_us) {
			fprintf(stderr, "deadline passed while sending (PGMCC stuck without ACKs?)\n");
			exit(3);
		}
		size_t sent = 0;
		const int st = pgm_send(g_sock, buf, len, &sent);
		switch (st) {
		case PGM_IO_STATUS_NORMAL:
			return;
		case PGM_IO_STATUS_RATE_LIMITED: {
			struct timeval tv;
			socklen_t optlen = sizeof tv;
			int ms = 1;
			if (pgm_getsockopt(g_sock, IPPROTO_PGM, PGM_RATE_REMAIN, &tv, &optlen))
				ms = (int)(tv.tv_sec * 1000 + (tv.tv_usec + 999) / 1000);
			poll(NULL, 0, ms > 0 ? ms : 1);
			break;
		}
		case PGM_IO_STATUS_WOULD_BLOCK:
		case PGM_IO_STATUS_CONGESTION: {
			/* POLLOUT gives the send socket, or the ACK notify fd under PGMCC congestion;
			 * time out anyway: the ACK expiry timer runs in the service thread */
			struct pollfd fds[4];
			int n = 4;
			memset(fds, 0, sizeof fds);
			pgm_poll_info(g_sock, fds, &n, POLLOUT);
			poll(fds, (nfds_t)n, 20);
			break;
		}
		default:
			fprintf(stderr, "pgm_send failed with status %d\n", st);
			exit(2);
		}
	}
}

static void usage(void)
{
	fprintf(stderr,
		"usage: pgm-send [options] (--file PATH | --bytes N)\n"
		"  -f, --file PATH     send the contents of PATH\n"
		"  -b, --bytes N       send N bytes of the pattern byte[i] = (i * 131 + i / 65536) & 255\n"
		"      --raw           no 16-byte PGMI stream header (for receivers other than pgm-recv)\n"
		"  -m, --msg-size N    bytes per APDU (default 1024; above the TSDU size libpgm fragments)\n"
		"  -r, --rate B        rate limit in bytes/s incl. IP/UDP headers (default 2000000, 0 = none)\n"
		"  -l, --linger S      keep serving repairs S seconds after the last byte (default 10)\n"
		"  -d, --delay MS      wait MS ms after connect before data so SPMs go first (default 500)\n"
		"      --deadline S    give up (exit 3) if sending takes more than S seconds\n"
		"      --src-offset N  source buffer address mod 16 (default 4 with --pgmcc, else 0;\n"
		"                      works around a libpgm alignment crash, see the source)\n"
		"      --txw-sqns N    transmit window in packets (default 10000)\n"
		"      --ambient-spm MS  ambient SPM interval (default 1000)\n" PGMI_COMMON_USAGE);
	exit(2);
}

int main(int argc, char **argv)
{
	struct pgmi_opts o;
	struct send_opts s = {.rate = 2000000, .txw_sqns = 10000, .ambient_ms = 1000};
	const char *file = NULL;
	long long nbytes = -1;
	size_t msg = 1024;
	double linger = 10;
	int delay_ms = 500;
	int src_offset = -1;
	double deadline = 0;
	bool raw = false;

	pgmi_defaults(&o);
	for (int i = 1; i < argc;) {
		const int used = pgmi_parse_common(&o, argc, argv, i);
		if (used) {
			i += used;
			continue;
		}
		const char *a = argv[i];
		const char *v = (i + 1 < argc) ? argv[i + 1] : NULL;
		if (!strcmp(a, "--raw")) {
			raw = true;
			i += 1;
			continue;
		}
		if (!v)
			usage();
		if (!strcmp(a, "-f") || !strcmp(a, "--file"))
			file = v;
		else if (!strcmp(a, "-b") || !strcmp(a, "--bytes"))
			nbytes = atoll(v);
		else if (!strcmp(a, "-m") || !strcmp(a, "--msg-size"))
			msg = (size_t)atol(v);
		else if (!strcmp(a, "-r") || !strcmp(a, "--rate"))
			s.rate = atol(v);
		else if (!strcmp(a, "-l") || !strcmp(a, "--linger"))
			linger = atof(v);
		else if (!strcmp(a, "-d") || !strcmp(a, "--delay"))
			delay_ms = atoi(v);
		else if (!strcmp(a, "--deadline"))
			deadline = atof(v);
		else if (!strcmp(a, "--src-offset"))
			src_offset = atoi(v) & 15;
		else if (!strcmp(a, "--txw-sqns"))
			s.txw_sqns = atoi(v);
		else if (!strcmp(a, "--ambient-spm"))
			s.ambient_ms = atoi(v);
		else
			usage();
		i += 2;
	}
	if ((file == NULL) == (nbytes < 0) || msg == 0 || msg > 65000)
		usage();

	FILE *in = NULL;
	if (file) {
		in = fopen(file, "rb");
		if (!in) {
			perror(file);
			return 2;
		}
		if (fseek(in, 0, SEEK_END) != 0 || (nbytes = ftell(in)) < 0) {
			perror(file);
			return 2;
		}
		rewind(in);
	}

	signal(SIGPIPE, SIG_IGN);
	g_sock = pgmi_open(&o, true, role_opts, &s);
	pthread_t thr;
	if (pthread_create(&thr, NULL, service, NULL) != 0) {
		perror("pthread_create");
		return 2;
	}
	if (deadline > 0)
		g_deadline_us = pgmi_now_us() + (uint64_t)(deadline * 1e6);
	poll(NULL, 0, delay_ms);

	unsigned char hdr[PGMI_HEADER_LEN];
	memcpy(hdr, PGMI_MAGIC, 4);
	for (int k = 0; k < 4; k++)
		hdr[4 + k] = (unsigned char)(PGMI_VERSION >> (24 - 8 * k));
	for (int k = 0; k < 8; k++)
		hdr[8 + k] = (unsigned char)((unsigned long long)nbytes >> (56 - 8 * k));
	if (!raw)
		send_apdu(hdr, sizeof hdr);

	/* Debian's libpgm 5.3.128 copies the payload into its packet buffer with a checksum loop
	 * that GCC vectorised with aligned 16-byte stores: it aligns the *source* pointer and
	 * then assumes the destination is aligned too. The payload sits at 32 mod 16 = 0 in the
	 * packet buffer without PGMCC and at 52 mod 16 = 4 with OPT_PGMCC_DATA, so a 16-aligned
	 * source buffer segfaults once PGMCC is on. Keep the source congruent with the
	 * destination (found with gdb: movaps to an address = 4 mod 16 in
	 * pgm_compat_csum_partial_copy). */
	if (src_offset < 0)
		src_offset = o.pgmcc ? 4 : 0;
	unsigned char *block = aligned_alloc(16, (msg + 16 + 15) / 16 * 16);
	if (!block)
		return 2;
	unsigned char *buf = block + src_offset;
	const uint64_t t0 = pgmi_now_us();
	unsigned long long off = 0;
	while (off < (unsigned long long)nbytes) {
		size_t n = msg;
		if ((unsigned long long)n > (unsigned long long)nbytes - off)
			n = (size_t)((unsigned long long)nbytes - off);
		if (in) {
			if (fread(buf, 1, n, in) != n) {
				fprintf(stderr, "%s: short read\n", file);
				return 2;
			}
		} else {
			for (size_t k = 0; k < n; k++) {
				const unsigned long long idx = off + k;
				buf[k] = (unsigned char)((idx * 131u + idx / 65536u) & 255u);
			}
		}
		send_apdu(buf, n);
		off += n;
	}
	const double secs = (double)(pgmi_now_us() - t0) / 1e6;
	printf("sent %llu bytes in %.2f s\n", off, secs);
	fflush(stdout);

	/* keep answering NAKs; receivers may still be repairing the tail */
	poll(NULL, 0, (int)(linger * 1000));
	atomic_store(&stop_service, true);
	pthread_join(thr, NULL);
	pgm_close(g_sock, true); /* sends SPMs with OPT_FIN */
	pgm_shutdown();
	free(block);
	if (in)
		fclose(in);
	return 0;
}
