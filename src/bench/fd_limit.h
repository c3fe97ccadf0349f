// fd_limit.h: raising this process's open-file limit for thousands of concurrent connections
// (the client's sockets, mock-server's connections). Changes nothing else.
#ifndef GB_BENCH_FD_LIMIT_H
#define GB_BENCH_FD_LIMIT_H

#include <stddef.h>

// Raises the soft RLIMIT_NOFILE to num_fds, or as far as the hard limit allows. Returns the
// soft limit in force afterwards.
size_t fd_limit_raise(size_t num_fds);

#endif
