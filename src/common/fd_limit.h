// fd_limit.h: raising this process's open-file limit for thousands of concurrent connections
// (the load generator's sockets, the servers' connections). Changes nothing else.
#ifndef GB_COMMON_FD_LIMIT_H
#define GB_COMMON_FD_LIMIT_H

#include <stddef.h>

// Raises the soft RLIMIT_NOFILE to num_fds, or as far as the hard limit allows. Returns the
// soft limit in force afterwards.
size_t fd_limit_raise(size_t num_fds);

#endif
