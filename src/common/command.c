// command.c: fork, a pipe for the child's stdout and stderr, execvp, read to EOF, waitpid.
#include "common/command.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

bool command_on_path(const char *name) {
  const char *path = getenv("PATH");
  if (!path || strchr(name, '/')) return false;
  for (const char *dir = path; *dir;) {
    size_t len = strcspn(dir, ":");
    char candidate[4096];
    snprintf(candidate, sizeof candidate, "%.*s/%s", (int)len, len ? dir : ".", name);
    struct stat st;
    if (stat(candidate, &st) == 0 && S_ISREG(st.st_mode) && access(candidate, X_OK) == 0)
      return true;
    dir += len + (dir[len] == ':');
  }
  return false;
}

int command_run(char *const *argv, Buf *out) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    buf_printf(out, "cannot run %s: pipe: %s", argv[0], strerror(errno));
    return 127;
  }
  pid_t pid = fork();
  if (pid < 0) {
    buf_printf(out, "cannot run %s: fork: %s", argv[0], strerror(errno));
    close(fds[0]);
    close(fds[1]);
    return 127;
  }
  if (pid == 0) {
    int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd >= 0) dup2(null_fd, STDIN_FILENO);
    dup2(fds[1], STDOUT_FILENO);
    dup2(fds[1], STDERR_FILENO);
    execvp(argv[0], argv);
    dprintf(STDERR_FILENO, "cannot run %s: %s", argv[0], strerror(errno));
    _exit(127);
  }
  close(fds[1]);
  char chunk[4096];
  for (;;) {
    ssize_t n = read(fds[0], chunk, sizeof chunk);
    if (n > 0) buf_append(out, chunk, (size_t)n);
    else if (n == 0 || errno != EINTR) break;
  }
  close(fds[0]);
  int status;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return 127;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
