// fd_limit.c: the soft open-file limit, raised up to the hard one. Never lowers it.
#include "common/fd_limit.h"

#include <sys/resource.h>

size_t fd_limit_raise(size_t num_fds) {
  struct rlimit lim;
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return 0;
  if (lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < num_fds) {
    rlim_t want = num_fds;
    if (lim.rlim_max != RLIM_INFINITY && want > lim.rlim_max) want = lim.rlim_max;
    lim.rlim_cur = want;
    if (setrlimit(RLIMIT_NOFILE, &lim) != 0) getrlimit(RLIMIT_NOFILE, &lim);
  }
  return lim.rlim_cur == RLIM_INFINITY ? (size_t)-1 : (size_t)lim.rlim_cur;
}
