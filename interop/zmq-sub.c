/*
 * zmq-sub: a ZeroMQ SUB socket on an epgm:// (PGM over UDP) endpoint, subscribed to
 * everything, writing each message's bytes to OUT (concatenated) until BYTES bytes have
 * arrived or no message came for IDLE_S seconds; prints "received N bytes in M messages".
 *
 *   zmq-sub ENDPOINT OUT BYTES [IDLE_S] [RATE_KBIT]
 *   e.g. zmq-sub "epgm://10.77.0.11;239.192.0.1:5555" out.bin 1000000 10 20000
 *
 * RATE_KBIT (ZMQ_RATE, default ZeroMQ's 100) matters on a SUB socket too: libzmq sizes the
 * receive window as ZMQ_RATE x ZMQ_RECOVERY_IVL (10 s), about 83 packets at the default, and a
 * loss not repaired before the window moves past it is lost for good. Give at least the
 * sender's rate.
 *
 * The peer of `pgmcc send --peer zeromq` in the interop tests. Exit status 0 when BYTES
 * arrived, 1 when it stopped short, 2 on setup errors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: zmq-sub ENDPOINT OUT BYTES [IDLE_S] [RATE_KBIT]\n");
		return 2;
	}
	const char *endpoint = argv[1];
	const long long want = atoll(argv[3]);
	const int idle_ms = (argc > 4 ? atoi(argv[4]) : 10) * 1000;
	const int rate = argc > 5 ? atoi(argv[5]) : 100;
	if (!zmq_has("pgm")) {
		fprintf(stderr, "zmq-sub: this libzmq was built without PGM support\n");
		return 2;
	}
	FILE *out = fopen(argv[2], "wb");
	if (!out) {
		perror(argv[2]);
		return 2;
	}
	void *ctx = zmq_ctx_new();
	void *sub = zmq_socket(ctx, ZMQ_SUB);
	const int hwm = 0;
	if (zmq_setsockopt(sub, ZMQ_RCVHWM, &hwm, sizeof hwm) != 0 ||
	    zmq_setsockopt(sub, ZMQ_RATE, &rate, sizeof rate) != 0 ||
	    zmq_setsockopt(sub, ZMQ_RCVTIMEO, &idle_ms, sizeof idle_ms) != 0 ||
	    zmq_setsockopt(sub, ZMQ_SUBSCRIBE, "", 0) != 0 || zmq_connect(sub, endpoint) != 0) {
		fprintf(stderr, "zmq-sub: %s: %s\n", endpoint, zmq_strerror(zmq_errno()));
		return 2;
	}
	long long got = 0;
	long messages = 0;
	while (got < want) {
		zmq_msg_t m;
		zmq_msg_init(&m);
		if (zmq_msg_recv(&m, sub, 0) < 0) {
			fprintf(stderr, "zmq-sub: no message for %d ms: %s\n", idle_ms,
				zmq_strerror(zmq_errno()));
			zmq_msg_close(&m);
			break;
		}
		fwrite(zmq_msg_data(&m), 1, zmq_msg_size(&m), out);
		got += (long long)zmq_msg_size(&m);
		messages++;
		zmq_msg_close(&m);
	}
	fclose(out);
	printf("received %lld bytes in %ld messages\n", got, messages);
	int zero = 0;
	zmq_setsockopt(sub, ZMQ_LINGER, &zero, sizeof zero);
	zmq_close(sub);
	zmq_ctx_term(ctx);
	return got >= want ? 0 : 1;
}
