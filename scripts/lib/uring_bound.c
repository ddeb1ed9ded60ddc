// The cheapest closed-loop HTTP/1.1 client io_uring allows on this kernel: the lower bound
// a generator that uses io_uring can reach, to set loadgen's cost against (not a generator:
// it checks nothing but each response's length, keeps no clock per request and records
// no latency). `C` connections on one thread, each sending the same GET as loadgen and wrk
// (`GET PATH HTTP/1.1`, `Host: 127.0.0.1:PORT`) as soon as its previous response is in.
// A response is counted by length alone: the first one is read with a blocking socket and
// its head and Content-Length give the length every later response must have (a server
// whose responses vary in length is refused: the byte total would not divide).
//
// One ring, SINGLE_ISSUER | DEFER_TASKRUN; one io_uring_enter per pass submits every queued
// send and waits for one completion. Each of the ring's features is a switch, so what each
// one saves can be measured alone (all on by default, as loadgen uses them where it can):
//   -M0  one-shot receives into a per-connection buffer instead of multishot receives into
//        provided buffers
//   -F0  plain file descriptors instead of registered (fixed) files
//   -S0  every send posts its completion (default: sends skip it on success, MSG_WAITALL)
//   -WN  each io_uring_enter waits for N completions (or 100 µs, whichever comes first)
//        instead of one: fewer, larger batches
//
//   uring_bound PORT CONNECTIONS SECONDS [PATH] [-M0] [-F0] [-S0] [-WN]
//
// Prints "N responses in T s" and "Requests/sec: R" (the lines loadgen and wrk print).
// Build: cc -O2 -o uring_bound uring_bound.c -luring (Debian: liburing-dev).
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BUF_LEN 4096
#define OP_SEND 1ull
#define OP_RECV 2ull
#define GROUP 0

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what, int err) {
  fprintf(stderr, "uring_bound: %s: %s\n", what, strerror(err));
  exit(1);
}

static int dial(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) die("socket", errno);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) die("connect", errno);
  return fd;
}

// The length of one whole response: sent and read on `fd` while it is still blocking.
static long probe_len(int fd, const char *req, size_t req_len) {
  if (send(fd, req, req_len, MSG_NOSIGNAL) != (ssize_t)req_len) die("probe send", errno);
  char buf[BUF_LEN];
  size_t got = 0;
  for (;;) {
    ssize_t n = recv(fd, buf + got, sizeof buf - 1 - got, 0);
    if (n <= 0) die("probe recv", n < 0 ? errno : ECONNRESET);
    got += n;
    buf[got] = 0;
    char *end = strstr(buf, "\r\n\r\n");
    if (!end) continue;
    char *cl = strcasestr(buf, "\r\ncontent-length:");
    if (!cl || cl > end) {
      fprintf(stderr, "uring_bound: the response has no Content-Length\n");
      exit(1);
    }
    long len = (end + 4 - buf) + strtol(cl + 17, NULL, 10);
    if ((long)got > len) {
      fprintf(stderr, "uring_bound: more bytes than one response\n");
      exit(1);
    }
    while ((long)got < len) {
      n = recv(fd, buf, sizeof buf, 0);
      if (n <= 0) die("probe recv", n < 0 ? errno : ECONNRESET);
      got += n;
    }
    return len;
  }
}

int main(int argc, char **argv) {
  int multishot = 1, fixed = 1, skip = 1, wait_nr = 1;
  const char *pos[4] = {0};
  int npos = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-M0")) multishot = 0;
    else if (!strcmp(argv[i], "-F0")) fixed = 0;
    else if (!strcmp(argv[i], "-S0")) skip = 0;
    else if (!strncmp(argv[i], "-W", 2) && atoi(argv[i] + 2) > 0) wait_nr = atoi(argv[i] + 2);
    else if (npos < 4) pos[npos++] = argv[i];
  }
  if (npos < 3) {
    fprintf(stderr, "usage: uring_bound PORT CONNECTIONS SECONDS [PATH] [-M0] [-F0] [-S0] [-WN]\n");
    return 2;
  }
  int port = atoi(pos[0]), conns = atoi(pos[1]);
  double secs = atof(pos[2]);
  if (port <= 0 || conns <= 0 || conns > 65535 || secs <= 0) {
    fprintf(stderr, "uring_bound: bad PORT, CONNECTIONS or SECONDS\n");
    return 2;
  }
  char req[512];
  int req_len = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n",
                         pos[3] ? pos[3] : "/ping", port);

  int *fd = calloc(conns, sizeof *fd);
  long *got = calloc(conns, sizeof *got);
  char *own = multishot ? NULL : malloc((size_t)conns * BUF_LEN);
  for (int i = 0; i < conns; i++) fd[i] = dial(port);
  long resp_len = probe_len(fd[0], req, req_len);
  for (int i = 0; i < conns; i++) fcntl(fd[i], F_SETFL, fcntl(fd[i], F_GETFL) | O_NONBLOCK);

  struct io_uring ring;
  struct io_uring_params p = {.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN |
                                       IORING_SETUP_CQSIZE,
                              .cq_entries = 4 * 4096};
  unsigned entries = 64;
  while (entries < (unsigned)conns * 2 + 16) entries *= 2;
  int r = io_uring_queue_init_params(entries, &ring, &p);
  if (r < 0) die("io_uring_queue_init", -r);
  if (fixed) {
    r = io_uring_register_files(&ring, fd, conns);
    if (r < 0) die("io_uring_register_files", -r);
  }
  unsigned nbufs = 64;
  while (nbufs < (unsigned)conns * 4) nbufs *= 2;
  struct io_uring_buf_ring *br = NULL;
  char *bufs = NULL;
  if (multishot) {
    if (posix_memalign((void **)&br, 4096, nbufs * sizeof(struct io_uring_buf))) die("alloc", ENOMEM);
    bufs = malloc((size_t)nbufs * BUF_LEN);
    struct io_uring_buf_reg reg = {.ring_addr = (uintptr_t)br, .ring_entries = nbufs, .bgid = GROUP};
    r = io_uring_register_buf_ring(&ring, &reg, 0);
    if (r < 0) die("io_uring_register_buf_ring", -r);
    io_uring_buf_ring_init(br);
    for (unsigned b = 0; b < nbufs; b++)
      io_uring_buf_ring_add(br, bufs + (size_t)b * BUF_LEN, BUF_LEN, b, io_uring_buf_ring_mask(nbufs), b);
    io_uring_buf_ring_advance(br, nbufs);
  }

  // The file a request names: its registered index (IOSQE_FIXED_FILE), or its descriptor.
#define FD(i) (fixed ? (i) : fd[i])
  struct io_uring_sqe *sqe;
#define GET_SQE() \
  while (!(sqe = io_uring_get_sqe(&ring))) io_uring_submit(&ring)
#define QUEUE_SEND(i) do { \
    GET_SQE(); \
    io_uring_prep_send(sqe, FD(i), req, req_len, MSG_NOSIGNAL | (skip ? MSG_WAITALL : 0)); \
    if (fixed) sqe->flags |= IOSQE_FIXED_FILE; \
    if (skip) sqe->flags |= IOSQE_CQE_SKIP_SUCCESS; \
    io_uring_sqe_set_data64(sqe, OP_SEND << 32 | (unsigned)(i)); \
  } while (0)
#define QUEUE_RECV(i) do { \
    GET_SQE(); \
    if (multishot) { \
      io_uring_prep_recv_multishot(sqe, FD(i), NULL, 0, 0); \
      sqe->flags |= IOSQE_BUFFER_SELECT; \
      sqe->buf_group = GROUP; \
    } else { \
      io_uring_prep_recv(sqe, FD(i), own + (size_t)(i) * BUF_LEN, BUF_LEN, 0); \
    } \
    if (fixed) sqe->flags |= IOSQE_FIXED_FILE; \
    io_uring_sqe_set_data64(sqe, OP_RECV << 32 | (unsigned)(i)); \
  } while (0)

  for (int i = 0; i < conns; i++) {
    QUEUE_SEND(i);
    QUEUE_RECV(i);
  }
  unsigned long long responses = 0, bytes = 0;
  double t0 = now_s(), end = t0 + secs, t1;
  for (;;) {
    if (wait_nr > 1) {
      struct __kernel_timespec ts = {.tv_nsec = 100000};
      struct io_uring_cqe *first;
      r = io_uring_submit_and_wait_timeout(&ring, &first, wait_nr, &ts, NULL);
    } else {
      r = io_uring_submit_and_wait(&ring, 1);
    }
    if (r < 0 && r != -EINTR && r != -EBUSY && r != -ETIME) die("io_uring_enter", -r);
    t1 = now_s();
    if (t1 >= end) break;
    struct io_uring_cqe *cqe;
    unsigned head, seen = 0, given = 0;
    io_uring_for_each_cqe(&ring, head, cqe) {
      seen++;
      uint64_t ud = io_uring_cqe_get_data64(cqe);
      int i = (int)(ud & 0xffffffff);
      int res = cqe->res;
      if (ud >> 32 == OP_SEND) {
        if (res < 0) die("send", -res);
        if (res < req_len) die("send (short)", EPIPE);
        continue;
      }
      if (res == -ENOBUFS) {
        QUEUE_RECV(i);
        continue;
      }
      if (res <= 0) die("recv", res < 0 ? -res : ECONNRESET);
      if (cqe->flags & IORING_CQE_F_BUFFER) {
        unsigned bid = cqe->flags >> IORING_CQE_BUFFER_SHIFT;
        io_uring_buf_ring_add(br, bufs + (size_t)bid * BUF_LEN, BUF_LEN, bid,
                              io_uring_buf_ring_mask(nbufs), given++);
      }
      bytes += res;
      got[i] += res;
      if (got[i] > resp_len) {
        fprintf(stderr, "uring_bound: %ld bytes for one %ld-byte response: lengths vary\n", got[i], resp_len);
        return 1;
      }
      if (got[i] == resp_len) {
        got[i] = 0;
        responses++;
        QUEUE_SEND(i);
      }
      if (!multishot || !(cqe->flags & IORING_CQE_F_MORE)) QUEUE_RECV(i);
    }
    if (given) io_uring_buf_ring_advance(br, given);
    io_uring_cq_advance(&ring, seen);
  }
  printf("uring_bound: 127.0.0.1:%d, %d connections, multishot %d, fixed files %d, send skips its CQE %d, "
         "waits for %d; %ld-byte responses\n", port, conns, multishot, fixed, skip, wait_nr, resp_len);
  printf("  %llu responses in %.2fs, %llu bytes\n", responses, t1 - t0, bytes);
  printf("Requests/sec: %.2f\n", responses / (t1 - t0));
  return 0;
}
