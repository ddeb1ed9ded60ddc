/* A capacity probe in the manner of netperf's idle "looper": a SCHED_IDLE thread spinning on
 * one CPU, so it runs only when nothing else wants that CPU. The iterations it loses while a
 * service runs beside it are the CPU the service really took (wake-ups, interrupts and all).
 * Iterations are a poor unit on a VM (their speed follows what the sibling vCPU and the host
 * do), so it also reads the clock every iteration and sums the gaps longer than GAP_NS: the
 * time something else had its CPU, whatever the spinner's speed.
 *
 *   idle_spinner CPU     prints "<monotonic ns> <iterations> <ns in gaps>" on stdout at start
 *                        and at every SIGUSR1, and exits on SIGTERM.
 *
 * Build: cc -O2 -o idle_spinner scripts/lib/idle_spinner.c (scripts/experiments/open-loop-cpu.sh
 * does). Linux only. */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define GAP_NS 1000

static volatile uint64_t iterations, gap_ns;
static volatile sig_atomic_t report, stop;

static void on_usr1(int s) { (void)s; report = 1; }
static void on_term(int s) { (void)s; stop = 1; }

static void print_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  printf("%lld %llu %llu\n", (long long)t.tv_sec * 1000000000LL + t.tv_nsec,
         (unsigned long long)iterations, (unsigned long long)gap_ns);
  fflush(stdout);
}

int main(int argc, char **argv) {
  if (argc != 2) { fprintf(stderr, "usage: idle_spinner CPU\n"); return 2; }
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(atoi(argv[1]), &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) { perror("sched_setaffinity"); return 1; }
  struct sched_param p = {0};
  if (sched_setscheduler(0, SCHED_IDLE, &p) != 0) { perror("SCHED_IDLE"); return 1; }
  signal(SIGUSR1, on_usr1);
  signal(SIGTERM, on_term);
  print_now();
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  int64_t last = (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
  while (!stop) {
    iterations++;
    clock_gettime(CLOCK_MONOTONIC, &t);
    int64_t now = (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
    if (now - last > GAP_NS) gap_ns += (uint64_t)(now - last);
    last = now;
    if (report) { report = 0; print_now(); }
  }
  return 0;
}
