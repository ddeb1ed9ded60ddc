/* Independent start-up probe, compiled: spawn a service pinned to one CPU, then from another
 * CPU connect + GET /ping until the first 200, retrying every RETRY_US. Prints one start-up
 * time per line, in µs. The clock starts just before posix_spawn, so it includes the exec.
 * Nothing here shares code with the runner. Beside startup_probe.py it costs a few µs per
 * attempt instead of tens, so how late it notices readiness is set by the retry gap alone.
 *
 * usage: startup_probe BINARY SERVER_CPU PROBE_CPU STARTS [RETRY_US]
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) {
    perror("startup_probe: sched_setaffinity");
    exit(2);
  }
}

static int free_port(void) {
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
      getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
    perror("startup_probe: free port");
    exit(2);
  }
  close(fd);
  return ntohs(a.sin_port);
}

/* 1 when a GET /ping on a fresh connection answers HTTP/1.1 200, 0 otherwise. */
static int ping(int port) {
  static const char req[] = "GET /ping HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  struct timeval tv = {.tv_sec = 1};
  char buf[64];
  int ok = 0, fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    return 0;
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
      write(fd, req, sizeof req - 1) == (ssize_t)(sizeof req - 1)) {
    ssize_t n = read(fd, buf, sizeof buf);
    ok = n >= 12 && memcmp(buf, "HTTP/1.1 200", 12) == 0;
  }
  close(fd);
  return ok;
}

static long long one(const char *binary, int server_cpu, int probe_cpu, long retry_us) {
  char listen[32];
  int port = free_port();
  snprintf(listen, sizeof listen, "127.0.0.1:%d", port);
  char *argv[] = {(char *)binary, "--listen", listen, "--workers", "1", NULL};
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);

  pin(server_cpu); /* the child inherits this mask */
  long long t0 = now_ns(), took = -1;
  pid_t pid;
  int err = posix_spawn(&pid, binary, &fa, &attr, argv, environ);
  pin(probe_cpu);
  if (err != 0) {
    fprintf(stderr, "startup_probe: spawn %s: %s\n", binary, strerror(err));
    exit(2);
  }
  struct timespec gap = {.tv_nsec = retry_us * 1000};
  while (now_ns() - t0 < 10000000000LL) {
    if (ping(port)) {
      took = (now_ns() - t0) / 1000;
      break;
    }
    if (retry_us > 0)
      nanosleep(&gap, NULL);
  }
  kill(-pid, SIGKILL);
  waitpid(pid, NULL, 0);
  if (took < 0) {
    fprintf(stderr, "startup_probe: %s: no 200 within 10 s\n", binary);
    exit(1);
  }
  return took;
}

int main(int argc, char **argv) {
  if (argc < 5 || argc > 6) {
    fprintf(stderr, "usage: startup_probe BINARY SERVER_CPU PROBE_CPU STARTS [RETRY_US]\n");
    return 2;
  }
  long retry_us = argc == 6 ? atol(argv[5]) : 50;
  for (int i = 0, n = atoi(argv[4]); i < n; i++) {
    printf("%lld\n", one(argv[1], atoi(argv[2]), atoi(argv[3]), retry_us));
    fflush(stdout);
  }
  return 0;
}
