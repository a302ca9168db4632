/*
 * pgm-recv: receive one pgm-send stream from a PGM group with libpgm over UDP encapsulation
 * and write its payload to a file.
 *
 * Prints "received N bytes" on stdout. Exit status:
 *   0  the whole stream arrived (length from the stream header)
 *   2  setup error or bad arguments
 *   3  unrecoverable loss (libpgm reported a session reset: data fell out of the window)
 *   4  timeout: nothing new for --timeout seconds, or --deadline passed (with --raw and no
 *      --bytes, an idle timeout after some data is the normal end: exit 0)
 *   5  malformed stream (no or bad 16-byte PGMI header, or more bytes than announced)
 */
#include <unistd.h>

#include "pgmi-common.h"

struct recv_opts {
	int rxw_sqns;
	int nak_bo_ms;
	int nak_rpt_ms;
	int nak_rdata_ms;
	int nak_retries;
};

static void role_opts(pgm_sock_t *sock, const void *ctx)
{
	const struct recv_opts *r = ctx;
	PGMI_SET(sock, PGM_RXW_SQNS, r->rxw_sqns);
	PGMI_SET(sock, PGM_PEER_EXPIRY, pgm_secs(300));
	PGMI_SET(sock, PGM_SPMR_EXPIRY, pgm_msecs(250));
	PGMI_SET(sock, PGM_NAK_BO_IVL, pgm_msecs(r->nak_bo_ms));
	PGMI_SET(sock, PGM_NAK_RPT_IVL, pgm_msecs(r->nak_rpt_ms));
	PGMI_SET(sock, PGM_NAK_RDATA_IVL, pgm_msecs(r->nak_rdata_ms));
	PGMI_SET(sock, PGM_NAK_DATA_RETRIES, r->nak_retries);
	PGMI_SET(sock, PGM_NAK_NCF_RETRIES, r->nak_retries);
	PGMI_SET(sock, PGM_ABORT_ON_RESET, 1);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: pgm-recv [options]\n"
		"  -o, --out PATH      write the payload here (default: discard)\n"
		"      --raw           no PGMI stream header: keep every APDU (for senders other than\n"
		"                      pgm-send --raw); ends after --bytes N or at the idle timeout\n"
		"      --bytes N       with --raw: the stream's length\n"
		"  -t, --timeout S     give up after S seconds without new data (default 30)\n"
		"      --deadline S    give up after S seconds in total (default none)\n"
		"      --rxw-sqns N    receive window in packets (default 10000)\n"
		"      --nak-bo-ivl MS     NAK back-off interval (default 50)\n"
		"      --nak-rpt-ivl MS    NAK repeat interval (default 200)\n"
		"      --nak-rdata-ivl MS  wait for RDATA after NCF (default 400)\n"
		"      --nak-retries N     NAK_DATA_RETRIES and NAK_NCF_RETRIES (default 50)\n"
		PGMI_COMMON_USAGE);
	exit(2);
}

int main(int argc, char **argv)
{
	struct pgmi_opts o;
	struct recv_opts r = {.rxw_sqns = 10000,
			      .nak_bo_ms = 50,
			      .nak_rpt_ms = 200,
			      .nak_rdata_ms = 400,
			      .nak_retries = 50};
	const char *out_path = NULL;
	double idle_timeout = 30, deadline = 0;
	bool raw = false;
	long long raw_bytes = -1;

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
		if (!strcmp(a, "-o") || !strcmp(a, "--out"))
			out_path = v;
		else if (!strcmp(a, "--bytes"))
			raw_bytes = atoll(v);
		else if (!strcmp(a, "-t") || !strcmp(a, "--timeout"))
			idle_timeout = atof(v);
		else if (!strcmp(a, "--deadline"))
			deadline = atof(v);
		else if (!strcmp(a, "--rxw-sqns"))
			r.rxw_sqns = atoi(v);
		else if (!strcmp(a, "--nak-bo-ivl"))
			r.nak_bo_ms = atoi(v);
		else if (!strcmp(a, "--nak-rpt-ivl"))
			r.nak_rpt_ms = atoi(v);
		else if (!strcmp(a, "--nak-rdata-ivl"))
			r.nak_rdata_ms = atoi(v);
		else if (!strcmp(a, "--nak-retries"))
			r.nak_retries = atoi(v);
		else
			usage();
		i += 2;
	}

	FILE *out = NULL;
	if (out_path) {
		out = fopen(out_path, "wb");
		if (!out) {
			perror(out_path);
			return 2;
		}
	}

	pgm_sock_t *sock = pgmi_open(&o, false, role_opts, &r);

	static unsigned char buf[65536];
	bool have_header = raw;
	unsigned long long expected = raw && raw_bytes >= 0 ? (unsigned long long)raw_bytes : 0,
			   got = 0;
	const bool open_ended = raw && raw_bytes < 0;
	const uint64_t start = pgmi_now_us();
	uint64_t last = start;
	int rc = -1;

	while (rc < 0) {
		size_t n = 0;
		pgm_error_t *err = NULL;
		const int st = pgm_recv(sock, buf, sizeof buf, 0, &n, &err);
		if (err) {
			fprintf(stderr, "pgm_recv: %s\n", err->message);
			pgm_error_free(err);
		}
		const uint64_t now = pgmi_now_us();
		switch (st) {
		case PGM_IO_STATUS_NORMAL:
			last = now;
			if (!have_header) {
				if (n != PGMI_HEADER_LEN || memcmp(buf, PGMI_MAGIC, 4) != 0) {
					fprintf(stderr, "first APDU (%zu bytes) is not a PGMI header\n", n);
					rc = 5;
					break;
				}
				for (int k = 0; k < 8; k++)
					expected = (expected << 8) | buf[8 + k];
				have_header = true;
				if (o.verbose)
					fprintf(stderr, "stream of %llu bytes\n", expected);
			} else {
				if (!open_ended && got + n > expected) {
					fprintf(stderr, "stream longer than announced %llu\n", expected);
					rc = 5;
					break;
				}
				if (out && fwrite(buf, 1, n, out) != n) {
					perror(out_path);
					return 2;
				}
				got += n;
			}
			if (have_header && !open_ended && got == expected)
				rc = 0;
			break;
		case PGM_IO_STATUS_RESET:
			fprintf(stderr, "unrecoverable loss: libpgm reset the session after %llu bytes\n",
				got);
			rc = 3;
			break;
		case PGM_IO_STATUS_TIMER_PENDING:
		case PGM_IO_STATUS_RATE_LIMITED:
		case PGM_IO_STATUS_WOULD_BLOCK:
			pgmi_wait(sock, 100, -1);
			break;
		case PGM_IO_STATUS_EOF:
		case PGM_IO_STATUS_FIN:
			fprintf(stderr, "session ended after %llu bytes\n", got);
			rc = (have_header && got == expected) ? 0 : 3;
			break;
		default:
			fprintf(stderr, "pgm_recv failed with status %d\n", st);
			rc = 3;
			break;
		}
		if (rc < 0 && (now - last) / 1e6 > idle_timeout) {
			fprintf(stderr, "timeout: nothing new for %.1f s\n", idle_timeout);
			rc = open_ended && got > 0 ? 0 : 4;
			if (open_ended)
				expected = got;
		}
		if (rc < 0 && deadline > 0 && (now - start) / 1e6 > deadline) {
			fprintf(stderr, "deadline of %.1f s passed\n", deadline);
			rc = 4;
		}
	}

	printf("received %llu bytes in %.2f s (announced %llu), exit %d\n", got,
	       (double)(pgmi_now_us() - start) / 1e6, expected, rc);
	if (out && fclose(out) != 0) {
		perror(out_path);
		rc = 2;
	}
	pgm_close(sock, false);
	pgm_shutdown();
	return rc;
}
