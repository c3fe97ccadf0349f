// cpu_cores.h: the CPUs this process may use: its affinity set (sched_getaffinity: taskset,
// cpusets, Slurm's binding) and its cgroup's CPU quota (cgroup v2 cpu.max, v1
// cpu.cfs_quota_us / cpu.cfs_period_us, on its own cgroup and every ancestor), so a process
// given 4 CPUs of a 64-core node runs 4 threads, and one on a 16-core node 16.
#ifndef GB_COMMON_CPU_CORES_H
#define GB_COMMON_CPU_CORES_H

#include <stddef.h>

// The CPU numbers of the affinity set, ascending, into cpus (at most max); returns how many the
// set has (which may exceed max). 0 when it cannot be read.
int cpu_cores_allowed(int *cpus, int max);

// The tightest CPU quota of the process's cgroups, in CPUs (1.5 = 150 ms per 100 ms); 0 when none
// is set or none can be read.
double cpu_cores_quota(void);

// Threads worth running: the affinity set's size, capped by the quota rounded up; at least 1.
int cpu_cores_usable(void);

// The quota in a cgroup v2 cpu.max ("200000 100000" -> 2; "max 100000" -> 0) or in v1's
// cpu.cfs_quota_us and cpu.cfs_period_us texts ("-1" -> 0); 0 for text it cannot read.
double cpu_cores_quota_v2(const char *cpu_max);
double cpu_cores_quota_v1(const char *quota_us, const char *period_us);

#endif
