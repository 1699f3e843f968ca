/* submit_api: Slurm's submission rate without sbatch's process start-up.
 *
 * C threads call libslurm's slurm_submit_batch_job (the RPC sbatch sends)
 * until N held jobs (priority 0, like `sbatch --hold`) are accepted; every
 * call is timed with CLOCK_MONOTONIC. This is the counterpart of
 * allot_loadgen's persistent clients: sbatch_bench.sh measures what a user
 * running sbatch sees, this measures slurmctld (and munge) alone.
 *
 *   cc -O2 -pthread -o submit_api bench/slurm/submit_api.c -lslurm
 *   SLURM_CONF=... ./submit_api N C     (prints one JSON line)
 *
 * Needs Debian's libslurm-dev (sbatch_bench.sh builds and runs it when the
 * header is there).
 */
#include <pthread.h>
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long n_jobs;
static atomic_long next_job;
static atomic_long failed;
static double *lat_ms; /* One slot per job; < 0 when the call failed. */
static char *env[] = {"PATH=/usr/bin:/bin", NULL};

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void *worker(void *arg) {
  (void)arg;
  for (;;) {
    long i = atomic_fetch_add(&next_job, 1);
    if (i >= n_jobs) return NULL;
    char name[32];
    snprintf(name, sizeof name, "api%ld", i);
    job_desc_msg_t d;
    slurm_init_job_desc_msg(&d);
    d.name = name;
    d.script = "#!/bin/sh\nsleep 3600\n";
    d.priority = 0; /* Held, as sbatch --hold. */
    d.user_id = getuid();
    d.group_id = getgid();
    d.work_dir = "/tmp";
    d.std_out = "/dev/null";
    d.environment = env;
    d.env_size = 1;
    d.min_nodes = 1;
    submit_response_msg_t *resp = NULL;
    double t0 = now_ms();
    int rc = slurm_submit_batch_job(&d, &resp);
    double t1 = now_ms();
    if (rc != SLURM_SUCCESS) {
      if (atomic_fetch_add(&failed, 1) < 5)
        fprintf(stderr, "submit_api: %s\n", slurm_strerror(slurm_get_errno()));
      lat_ms[i] = -1;
    } else {
      lat_ms[i] = t1 - t0;
    }
    if (resp) slurm_free_submit_response_response_msg(resp);
  }
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double pct(const double *v, long n, double p) {
  if (n == 0) return 0;
  long k = (long)(p / 100.0 * (double)n + 0.999999);
  if (k < 1) k = 1;
  if (k > n) k = n;
  return v[k - 1];
}

int main(int argc, char **argv) {
  n_jobs = argc > 1 ? atol(argv[1]) : 5000;
  int clients = argc > 2 ? atoi(argv[2]) : 64;
  if (n_jobs < 1 || clients < 1) {
    fprintf(stderr, "usage: submit_api [N] [CLIENTS]\n");
    return 2;
  }
  slurm_init(NULL);
  lat_ms = calloc((size_t)n_jobs, sizeof *lat_ms);
  pthread_t *th = calloc((size_t)clients, sizeof *th);
  double start = now_ms();
  for (int c = 0; c < clients; ++c) pthread_create(&th[c], NULL, worker, NULL);
  for (int c = 0; c < clients; ++c) pthread_join(th[c], NULL);
  double wall_s = (now_ms() - start) / 1e3;
  long ok = 0;
  for (long i = 0; i < n_jobs; ++i)
    if (lat_ms[i] >= 0) lat_ms[ok++] = lat_ms[i];
  qsort(lat_ms, (size_t)ok, sizeof *lat_ms, cmp);
  double rate = (double)ok / wall_s;
  fprintf(stderr,
          "libslurm: accepted %ld of %ld in %.3f s: %.1f/s; latency ms p50 %.2f "
          "p90 %.2f p99 %.2f max %.2f; failed %ld\n",
          ok, n_jobs, wall_s, rate, pct(lat_ms, ok, 50), pct(lat_ms, ok, 90),
          pct(lat_ms, ok, 99), ok ? lat_ms[ok - 1] : 0.0, (long)failed);
  printf("{\"tool\":\"libslurm\",\"jobs\":%ld,\"clients\":%d,\"accepted\":%ld,"
         "\"failed\":%ld,\"wallS\":%.3f,\"submitPerS\":%.1f,\"p50Ms\":%.2f,"
         "\"p90Ms\":%.2f,\"p99Ms\":%.2f,\"maxMs\":%.2f}\n",
         n_jobs, clients, ok, (long)failed, wall_s, rate, pct(lat_ms, ok, 50),
         pct(lat_ms, ok, 90), pct(lat_ms, ok, 99), ok ? lat_ms[ok - 1] : 0.0);
  slurm_fini();
  return failed ? 1 : 0;
}
