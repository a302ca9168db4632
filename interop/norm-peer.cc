/*
 * norm-peer: a NORM (RFC 5740) sender or receiver built on NRL's libnorm (Debian
 * libnorm-dev), with NORM-CC congestion control (RFC 5740 §5.5, NORM's own TFMCC-like
 * scheme) on by default: the NORM row of `pgmcc emu`'s peer flows.
 *
 *   norm-peer send --addr GROUP --port P [--bytes N | --seconds S] [--no-cc] [--rate BPS]
 *                  [--rate-min BPS] [--rate-max BPS] [--iface IF] [--linger S]
 *   norm-peer recv --addr GROUP --port P [--bytes N] [--iface IF]
 *
 * Data is one NORM stream of a deterministic pattern: --bytes N sends N bytes and closes the
 * stream (receivers then report completion), --seconds S sends for S seconds. Every packet
 * of the session uses UDP port P (session traffic) or P+1 (each node's transmit socket), so
 * an observer can tell the session apart by ports alone.
 *
 * The sender prints "sent N bytes in T s, rate R bit/s" on stdout; the receiver prints
 * "received N bytes in T s, B stream breaks" and "complete" when the stream ended cleanly.
 * Exit status: 0 on success, 1 if a receiver ended (SIGTERM) before the stream did or got
 * fewer than --bytes, 2 on setup errors.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <time.h>

#include <normApi.h>

#define SEGMENT 1400
#define BLOCK 64
#define PARITY 16
#define STREAM_BUFFER (4 * 1024 * 1024)

static volatile sig_atomic_t stopped;

static void on_signal(int sig)
{
	(void)sig;
	stopped = 1;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: norm-peer send --addr GROUP --port P [--bytes N | --seconds S] [--no-cc]\n"
		"                      [--rate BPS] [--rate-min BPS] [--rate-max BPS] [--iface IF]\n"
		"                      [--linger S]\n"
		"       norm-peer recv --addr GROUP --port P [--bytes N] [--iface IF]\n"
		"  --bytes N     send N bytes then close the stream (receiver: expect N)\n"
		"  --seconds S   send for S seconds (default when --bytes is not given: until SIGTERM)\n"
		"  --no-cc       fixed rate (--rate, default 1 Mbit/s) instead of NORM-CC\n"
		"  --rate-min/--rate-max  bounds on NORM-CC's rate in bit/s\n"
		"  --linger S    after the last byte, keep answering NACKs up to S s (default 10)\n");
	exit(2);
}

/* Waits up to `timeout` seconds for a NORM event; false on timeout or signal. */
static bool next_event(NormInstanceHandle inst, NormEvent *ev, double timeout)
{
	const int fd = NormGetDescriptor(inst);
	fd_set rd;
	FD_ZERO(&rd);
	FD_SET(fd, &rd);
	struct timeval tv;
	tv.tv_sec = (time_t)timeout;
	tv.tv_usec = (suseconds_t)((timeout - (double)(time_t)timeout) * 1e6);
	const int n = select(fd + 1, &rd, NULL, NULL, &tv);
	if (n <= 0)
		return false;
	return NormGetNextEvent(inst, ev, false);
}

static NormSessionHandle open_session(NormInstanceHandle inst, const char *addr, int port,
				      const char *iface)
{
	NormSessionHandle s = NormCreateSession(inst, addr, (UINT16)port, NORM_NODE_ANY);
	if (s == NORM_SESSION_INVALID) {
		fprintf(stderr, "norm-peer: NormCreateSession(%s/%d) failed\n", addr, port);
		exit(2);
	}
	if (!NormSetTxPort(s, (UINT16)(port + 1), false, NULL)) {
		fprintf(stderr, "norm-peer: NormSetTxPort(%d) failed\n", port + 1);
		exit(2);
	}
	if (iface && !NormSetMulticastInterface(s, iface)) {
		fprintf(stderr, "norm-peer: NormSetMulticastInterface(%s) failed\n", iface);
		exit(2);
	}
	NormSetTTL(s, 8);
	NormSetMulticastLoopback(s, false);
	return s;
}

static int run_send(NormInstanceHandle inst, NormSessionHandle s, long long bytes,
		    double seconds, bool cc, double rate, double rate_min, double rate_max,
		    double linger)
{
	srand((unsigned)time(NULL));
	NormSetTxSocketBuffer(s, 4 * 1024 * 1024);
	if (cc) {
		NormSetCongestionControl(s, true, true);
		if (rate_min > 0 || rate_max > 0)
			NormSetTxRateBounds(s, rate_min > 0 ? rate_min : -1.0,
					    rate_max > 0 ? rate_max : -1.0);
	} else {
		NormSetTxRate(s, rate);
	}
	if (!NormStartSender(s, (NormSessionId)rand(), 16 * 1024 * 1024, SEGMENT, BLOCK,
			     PARITY, 0)) {
		fprintf(stderr, "norm-peer: NormStartSender failed\n");
		return 2;
	}
	NormObjectHandle stream = NormStreamOpen(s, STREAM_BUFFER, NULL, 0);
	if (stream == NORM_OBJECT_INVALID) {
		fprintf(stderr, "norm-peer: NormStreamOpen failed\n");
		return 2;
	}
	NormStreamSetAutoFlush(stream, NORM_FLUSH_PASSIVE);
	char chunk[SEGMENT * 8];
	for (size_t i = 0; i < sizeof chunk; i++)
		chunk[i] = (char)(i * 131 + 7);
	const double t0 = now_s();
	long long sent = 0;
	size_t off = 0; /* bytes of `chunk` already accepted */
	for (;;) {
		if (stopped)
			break;
		if (bytes >= 0 && sent >= bytes)
			break;
		if (seconds > 0 && now_s() - t0 >= seconds)
			break;
		size_t want = sizeof chunk - off;
		if (bytes >= 0 && (long long)want > bytes - sent)
			want = (size_t)(bytes - sent);
		const unsigned int took = NormStreamWrite(stream, chunk + off, (unsigned int)want);
		sent += took;
		off = (off + took) % sizeof chunk;
		if (took < want) {
			/* buffer full: wait for vacancy (NORM paces by its rate / NORM-CC) */
			NormEvent ev;
			while (!stopped && next_event(inst, &ev, 0.2)) {
				if (ev.type == NORM_TX_QUEUE_VACANCY || ev.type == NORM_TX_QUEUE_EMPTY)
					break;
			}
		}
	}
	const double t_last = now_s() - t0;
	NormStreamFlush(stream, true, NORM_FLUSH_ACTIVE);
	NormStreamClose(stream, true);
	/* Serve repairs until NORM's flush completes (no receiver NACKs any more) or linger
	 * runs out. */
	const double until = now_s() + linger;
	stopped = 0;
	bool flushed = false;
	while (!stopped && !flushed && now_s() < until) {
		NormEvent ev;
		if (next_event(inst, &ev, 0.2) && ev.type == NORM_TX_FLUSH_COMPLETED)
			flushed = true;
	}
	printf("sent %lld bytes: last byte accepted after %.3f s, %s after %.3f s; rate %.0f bit/s\n",
	       sent, t_last, flushed ? "flush completed" : "stopped before the flush completed",
	       now_s() - t0, NormGetTxRate(s));
	fflush(stdout);
	NormStopSender(s);
	return 0;
}

static int run_recv(NormInstanceHandle inst, NormSessionHandle s, long long expect)
{
	NormSetDefaultSyncPolicy(s, NORM_SYNC_STREAM);
	NormSetRxSocketBuffer(s, 4 * 1024 * 1024);
	if (!NormStartReceiver(s, 16 * 1024 * 1024)) {
		fprintf(stderr, "norm-peer: NormStartReceiver failed\n");
		return 2;
	}
	char buf[65536];
	long long got = 0;
	long breaks = 0;
	bool complete = false;
	double t0 = 0;
	while (!stopped && !complete) {
		NormEvent ev;
		if (!next_event(inst, &ev, 0.2))
			continue;
		switch (ev.type) {
		case NORM_RX_OBJECT_NEW:
			if (t0 == 0)
				t0 = now_s();
			break;
		case NORM_RX_OBJECT_UPDATED:
			for (bool broke = false;;) {
				unsigned int n = sizeof buf;
				if (!NormStreamRead(ev.object, buf, &n)) {
					/* data lost for good: reading on resumes after the gap */
					breaks++;
					if (broke)
						break;
					broke = true;
					continue;
				}
				broke = false;
				if (n == 0)
					break;
				got += n;
			}
			break;
		case NORM_RX_OBJECT_COMPLETED:
			complete = true;
			break;
		case NORM_RX_OBJECT_ABORTED:
			fprintf(stderr, "norm-peer: the sender aborted the stream\n");
			complete = false;
			stopped = 1;
			break;
		default:
			break;
		}
	}
	const double t = t0 > 0 ? now_s() - t0 : 0.0;
	printf("received %lld bytes in %.3f s, %ld stream breaks\n", got, t, breaks);
	if (complete)
		printf("complete\n");
	fflush(stdout);
	NormStopReceiver(s);
	if (!complete || (expect >= 0 && got < expect) || breaks > 0)
		return 1;
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		usage();
	const char *mode = argv[1];
	const char *addr = NULL, *iface = NULL;
	int port = 0;
	long long bytes = -1;
	double seconds = 0, rate = 1e6, rate_min = 0, rate_max = 0, linger = 10;
	bool cc = true;
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define VAL()                      \
	do {                       \
		if (!v)            \
			usage();   \
		i++;               \
	} while (0)
		if (!strcmp(a, "--addr")) { VAL(); addr = v; }
		else if (!strcmp(a, "--port")) { VAL(); port = atoi(v); }
		else if (!strcmp(a, "--iface")) { VAL(); iface = v; }
		else if (!strcmp(a, "--bytes")) { VAL(); bytes = atoll(v); }
		else if (!strcmp(a, "--seconds")) { VAL(); seconds = atof(v); }
		else if (!strcmp(a, "--rate")) { VAL(); rate = atof(v); }
		else if (!strcmp(a, "--rate-min")) { VAL(); rate_min = atof(v); }
		else if (!strcmp(a, "--rate-max")) { VAL(); rate_max = atof(v); }
		else if (!strcmp(a, "--linger")) { VAL(); linger = atof(v); }
		else if (!strcmp(a, "--no-cc")) cc = false;
		else usage();
	}
	if (!addr || port <= 0 || port > 65534)
		usage();
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	NormInstanceHandle inst = NormCreateInstance(false);
	if (inst == NORM_INSTANCE_INVALID) {
		fprintf(stderr, "norm-peer: NormCreateInstance failed\n");
		return 2;
	}
	NormSessionHandle s = open_session(inst, addr, port, iface);
	int rc;
	if (!strcmp(mode, "send"))
		rc = run_send(inst, s, bytes, seconds, cc, rate, rate_min, rate_max, linger);
	else if (!strcmp(mode, "recv"))
		rc = run_recv(inst, s, bytes);
	else
		usage();
	NormDestroySession(s);
	NormDestroyInstance(inst);
	return rc;
}
