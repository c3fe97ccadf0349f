// cpu_cores.c: sched_getaffinity for the set; /proc/self/cgroup for the cgroup paths, then the
// quota files under /sys/fs/cgroup from the process's own cgroup up to the root (a limit set on
// a parent binds the children too).
#include "common/cpu_cores.h"

#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/file.h"

int cpu_cores_allowed(int *cpus, int max) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
  int n = 0;
  for (int c = 0; c < CPU_SETSIZE; c++) {
    if (!CPU_ISSET(c, &set)) continue;
    if (n < max) cpus[n] = c;
    n++;
  }
  return n;
}

double cpu_cores_quota_v2(const char *cpu_max) {
  char quota[32];
  double period;
  if (sscanf(cpu_max, "%31s %lf", quota, &period) != 2 || period <= 0) return 0;
  char *end;
  double q = strtod(quota, &end);
  return *end || q <= 0 ? 0 : q / period;  // "max": no limit
}

double cpu_cores_quota_v1(const char *quota_us, const char *period_us) {
  double q = strtod(quota_us, NULL), p = strtod(period_us, NULL);
  return q > 0 && p > 0 ? q / p : 0;
}

// The text of a small file under /sys/fs/cgroup (dir and name), "" when it cannot be read.
static void read_cgroup_file(const char *dir, const char *name, Buf *out) {
  char path[4096], err[256];
  snprintf(path, sizeof path, "/sys/fs/cgroup%s/%s", dir, name);
  buf_clear(out);
  if (!file_read_all(path, out, err, sizeof err)) buf_clear(out);
  buf_append_str(out, "");
}

// The smaller of two quotas (0: none).
static double tighter(double a, double b) { return a <= 0 ? b : b <= 0 ? a : a < b ? a : b; }

// The tightest quota from dir (e.g. "/a/b", under /sys/fs/cgroup + mount) up to the root; v1
// when mount names the cpu controller's folder, else v2.
static double quota_up_from(const char *mount, const char *dir) {
  char rel[2048], path[4096];
  snprintf(rel, sizeof rel, "%s", *dir ? dir : "/");
  double q = 0;
  Buf a = {0}, b = {0};
  for (;;) {
    snprintf(path, sizeof path, "%s%s", mount, strcmp(rel, "/") == 0 ? "" : rel);
    if (*mount) {
      read_cgroup_file(path, "cpu.cfs_quota_us", &a);
      read_cgroup_file(path, "cpu.cfs_period_us", &b);
      q = tighter(q, cpu_cores_quota_v1(a.data, b.data));
    } else {
      read_cgroup_file(path, "cpu.max", &a);
      q = tighter(q, cpu_cores_quota_v2(a.data));
    }
    char *slash = strrchr(rel, '/');
    if (strcmp(rel, "/") == 0 || !slash) break;
    if (slash == rel) slash[1] = '\0';  // "/a" -> "/"
    else *slash = '\0';
  }
  buf_free(&a);
  buf_free(&b);
  return q;
}

double cpu_cores_quota(void) {
  Buf text = {0};
  char err[256];
  if (!file_read_all("/proc/self/cgroup", &text, err, sizeof err)) return 0;
  buf_append_str(&text, "");
  double q = 0;
  for (char *line = text.data, *next; line && *line; line = next) {
    next = strchr(line, '\n');
    if (next) *next++ = '\0';
    char *colon1 = strchr(line, ':'), *colon2 = colon1 ? strchr(colon1 + 1, ':') : NULL;
    if (!colon2) continue;
    *colon2 = '\0';
    const char *controllers = colon1 + 1, *dir = colon2 + 1;
    if (!*controllers) {
      q = tighter(q, quota_up_from("", dir));  // cgroup v2
    } else {
      char list[256];
      snprintf(list, sizeof list, ",%s,", controllers);
      if (strstr(list, ",cpu,")) {  // v1: mounted as cpu or cpu,cpuacct
        q = tighter(q, quota_up_from("/cpu", dir));
        q = tighter(q, quota_up_from("/cpu,cpuacct", dir));
      }
    }
  }
  buf_free(&text);
  return q;
}

int cpu_cores_usable(void) {
  int n = cpu_cores_allowed(NULL, 0);
  double q = cpu_cores_quota();
  if (q > 0 && (n == 0 || ceil(q) < n)) n = (int)ceil(q);
  return n > 0 ? n : 1;
}
