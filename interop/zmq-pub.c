/*
 * zmq-pub: a ZeroMQ PUB socket on an epgm:// (PGM over UDP) endpoint, sending COUNT text
 * messages "message <i>" (i = 0..COUNT-1), each as one ZeroMQ message, then lingering so
 * receivers can repair, then closing (libpgm sends SPMs with OPT_FIN).
 *
 *   zmq-pub ENDPOINT COUNT [RATE_KBIT] [LINGER_S]
 *   e.g. zmq-pub "epgm://10.77.0.1;239.192.0.1:5555" 1000 2000 3
 *
 * ZeroMQ frames its messages inside PGM (docs/interop.md); `pgmcc recv --zmq` decodes them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: zmq-pub ENDPOINT COUNT [RATE_KBIT] [LINGER_S]\n");
		return 2;
	}
	const char *endpoint = argv[1];
	const long count = atol(argv[2]);
	const int rate = argc > 3 ? atoi(argv[3]) : 2000;
	const int linger_s = argc > 4 ? atoi(argv[4]) : 3;
	if (!zmq_has("pgm")) {
		fprintf(stderr, "zmq-pub: this libzmq was built without PGM support\n");
		return 2;
	}
	void *ctx = zmq_ctx_new();
	void *pub = zmq_socket(ctx, ZMQ_PUB);
	/* A PUB socket drops messages beyond its high-water mark (default 1000): no limit. */
	const int hwm = 0;
	if (zmq_setsockopt(pub, ZMQ_SNDHWM, &hwm, sizeof hwm) != 0 ||
	    zmq_setsockopt(pub, ZMQ_RATE, &rate, sizeof rate) != 0 ||
	    zmq_connect(pub, endpoint) != 0) {
		fprintf(stderr, "zmq-pub: %s: %s\n", endpoint, zmq_strerror(zmq_errno()));
		return 2;
	}
	usleep(500 * 1000); /* let the first SPMs go out */
	char buf[64];
	for (long i = 0; i < count; i++) {
		int n = snprintf(buf, sizeof buf, "message %ld", i);
		if (zmq_send(pub, buf, (size_t)n, 0) != n) {
			fprintf(stderr, "zmq-pub: send: %s\n", zmq_strerror(zmq_errno()));
			return 2;
		}
	}
	sleep((unsigned)linger_s);
	int zero = 0;
	zmq_setsockopt(pub, ZMQ_LINGER, &zero, sizeof zero);
	zmq_close(pub);
	zmq_ctx_term(ctx);
	printf("sent %ld messages\n", count);
	return 0;
}
