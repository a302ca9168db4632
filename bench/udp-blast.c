/*
 * udp-blast: the practical ceiling for multicast on this host. A sender pushes datagrams to a
 * group as fast as sendmmsg allows; receivers count what recvmmsg hands them. No reliability,
 * no congestion control: what the kernel can move, for `make bench` to compare against.
 *
 *   udp-blast send GROUP PORT IFADDR BYTES [SIZE]   send BYTES in SIZE-byte datagrams (TTL 0)
 *   udp-blast recv GROUP PORT IFADDR                count until 1 s passes without data
 *
 * `recv` prints one line: "bytes <n> datagrams <n> seconds <s>" (first to last datagram).
 * `send` prints "bytes <n> seconds <s>". Multicast TTL is 0 and loop is on: nothing leaves
 * the host.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BATCH 64

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static void die(const char *what)
{
	perror(what);
	exit(2);
}

static int blast_send(const char *group, int port, const char *ifaddr, long long bytes, int size)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0)
		die("socket");
	struct in_addr ifa;
	if (inet_pton(AF_INET, ifaddr, &ifa) != 1)
		die("interface address");
	unsigned char ttl = 0, loop = 1;
	int buf = 4 << 20;
	if (setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &ifa, sizeof ifa) < 0 ||
	    setsockopt(fd, IPPROTO_IP, IP_MULTICAST_TTL, &ttl, sizeof ttl) < 0 ||
	    setsockopt(fd, IPPROTO_IP, IP_MULTICAST_LOOP, &loop, sizeof loop) < 0)
		die("setsockopt");
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
	struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(port)};
	if (inet_pton(AF_INET, group, &to.sin_addr) != 1)
		die("group address");
	char *data = calloc(BATCH, size);
	struct mmsghdr msgs[BATCH];
	struct iovec iov[BATCH];
	memset(msgs, 0, sizeof msgs);
	for (int i = 0; i < BATCH; i++) {
		iov[i].iov_base = data + (size_t)i * size;
		iov[i].iov_len = size;
		msgs[i].msg_hdr.msg_iov = &iov[i];
		msgs[i].msg_hdr.msg_iovlen = 1;
		msgs[i].msg_hdr.msg_name = &to;
		msgs[i].msg_hdr.msg_namelen = sizeof to;
	}
	long long sent = 0;
	double t0 = now();
	while (sent < bytes) {
		int n = sendmmsg(fd, msgs, BATCH, 0);
		if (n < 0) {
			if (errno == ENOBUFS || errno == EAGAIN || errno == EINTR)
				continue;
			die("sendmmsg");
		}
		sent += (long long)n * size;
	}
	printf("bytes %lld seconds %.6f\n", sent, now() - t0);
	return 0;
}

static int blast_recv(const char *group, int port, const char *ifaddr)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0)
		die("socket");
	int one = 1, buf = 16 << 20;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
	struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(port)};
	if (inet_pton(AF_INET, group, &addr.sin_addr) != 1)
		die("group address");
	if (bind(fd, (struct sockaddr *)&addr, sizeof addr) < 0)
		die("bind");
	struct ip_mreq mreq;
	mreq.imr_multiaddr = addr.sin_addr;
	if (inet_pton(AF_INET, ifaddr, &mreq.imr_interface) != 1)
		die("interface address");
	if (setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mreq, sizeof mreq) < 0)
		die("IP_ADD_MEMBERSHIP");
	struct timeval tv = {.tv_sec = 1};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	enum { SZ = 65536 };
	char *data = malloc((size_t)BATCH * SZ);
	struct mmsghdr msgs[BATCH];
	struct iovec iov[BATCH];
	memset(msgs, 0, sizeof msgs);
	for (int i = 0; i < BATCH; i++) {
		iov[i].iov_base = data + (size_t)i * SZ;
		iov[i].iov_len = SZ;
		msgs[i].msg_hdr.msg_iov = &iov[i];
		msgs[i].msg_hdr.msg_iovlen = 1;
	}
	long long bytes = 0, count = 0;
	double first = 0, last = 0;
	for (;;) {
		int n = recvmmsg(fd, msgs, BATCH, MSG_WAITFORONE, NULL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if ((errno == EAGAIN || errno == EWOULDBLOCK) && count == 0)
				continue; /* still waiting for the sender */
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break; /* 1 s without data: done */
			die("recvmmsg");
		}
		double t = now();
		if (count == 0)
			first = t;
		last = t;
		for (int i = 0; i < n; i++)
			bytes += msgs[i].msg_len;
		count += n;
	}
	printf("bytes %lld datagrams %lld seconds %.6f\n", bytes, count, last - first);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 6 && strcmp(argv[1], "send") == 0)
		return blast_send(argv[2], atoi(argv[3]), argv[4], atoll(argv[5]),
				  argc > 6 ? atoi(argv[6]) : 1400);
	if (argc >= 5 && strcmp(argv[1], "recv") == 0)
		return blast_recv(argv[2], atoi(argv[3]), argv[4]);
	fprintf(stderr, "usage: udp-blast send GROUP PORT IFADDR BYTES [SIZE] | recv GROUP PORT IFADDR\n");
	return 2;
}
