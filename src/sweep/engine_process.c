// engine_process.c: fork/exec of an engine into its own process group, the readiness poll over
// HTTP (libcurl easy API, one short request at a time), and the group's shutdown.
#include "sweep/engine_process.h"

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/check.h"
#include "common/clock.h"
#include "common/file.h"

#define POLL_NS (200 * INT64_C(1000000))
#define PORT_WAIT_NS (30 * INT64_C(1000000000))

extern char **environ;

static void sleep_ns(int64_t ns) {
  struct timespec ts = {ns / 1000000000, ns % 1000000000};
  nanosleep(&ts, NULL);
}

static bool port_bindable(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  bool ok = bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
  close(fd);
  return ok;
}

int eproc_free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  int port = 0;
  if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
      getsockname(fd, (struct sockaddr *)&a, &len) == 0)
    port = ntohs(a.sin_port);
  close(fd);
  return port;
}

// environ plus env; a NAME given in env replaces the inherited one.
static char **child_environment(char *const *env, size_t num_env) {
  size_t n = 0;
  while (environ[n]) n++;
  char **out = xcalloc(n + num_env + 1, sizeof *out);
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    bool replaced = false;
    for (size_t j = 0; j < num_env && !replaced; j++) {
      size_t name_len = (size_t)(strchr(env[j], '=') - env[j]);
      replaced = strncmp(environ[i], env[j], name_len + 1) == 0;
    }
    if (!replaced) out[k++] = environ[i];
  }
  for (size_t j = 0; j < num_env; j++) out[k++] = env[j];
  return out;
}

bool eproc_start(EngineProcess *p, char *const *argv, char *const *env, size_t num_env, int port,
                 const char *log_path, char *err, size_t err_size) {
  *p = (EngineProcess){.port = port, .log_path = xstrdup(log_path)};
  int log_fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    snprintf(err, err_size, "cannot create %s: %s", log_path, strerror(errno));
    return false;
  }
  char **envp = child_environment(env, num_env);
  fflush(NULL);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid == 0) {  // the child: only async-signal-safe calls until exec
    setpgid(0, 0);
    // If the harness dies without stopping it (SIGKILL, a crash), the engine gets SIGTERM; the
    // check after it covers a parent that died before the call.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(1);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd >= 0) dup2(null_fd, STDIN_FILENO);
    dup2(log_fd, STDOUT_FILENO);
    dup2(log_fd, STDERR_FILENO);
    execvpe(argv[0], argv, envp);
    dprintf(STDERR_FILENO, "gptoss-bench sweep: error: cannot run '%s': %s\n", argv[0],
            strerror(errno));
    _exit(127);
  }
  int fork_errno = errno;
  free(envp);
  close(log_fd);
  if (pid < 0) {
    snprintf(err, err_size, "fork: %s", strerror(fork_errno));
    return false;
  }
  setpgid(pid, pid);  // also here, so a signal sent right after the fork reaches the group
  p->pid = pid;
  return true;
}

bool eproc_alive(EngineProcess *p) {
  if (p->pid <= 0 || p->exited) return false;
  int status;
  pid_t r = waitpid(p->pid, &status, WNOHANG);
  if (r == p->pid || (r < 0 && errno == ECHILD)) {
    p->exited = true;
    p->exit_status = r == p->pid ? status : 0;
    return false;
  }
  return true;
}

static size_t discard(char *data, size_t size, size_t n, void *user) {
  (void)data;
  (void)user;
  return size * n;
}

static bool http_ok(CURL *curl, int port, const char *path) {
  char url[128];
  snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, path);
  curl_easy_setopt(curl, CURLOPT_URL, url);
  long code = 0;
  return curl_easy_perform(curl) == CURLE_OK &&
         curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code) == CURLE_OK && code == 200;
}

void eproc_describe_exit(const EngineProcess *p, char *out, size_t out_size) {
  int s = p->exit_status;
  if (WIFSIGNALED(s)) snprintf(out, out_size, "killed by signal %d", WTERMSIG(s));
  else snprintf(out, out_size, "exited with status %d", WEXITSTATUS(s));
}

static void describe_exit(const EngineProcess *p, char *out, size_t out_size) {
  char line[512], how[64];
  eproc_last_error_line(p->log_path, line, sizeof line);
  eproc_describe_exit(p, how, sizeof how);
  if (line[0]) snprintf(out, out_size, "%s", line);
  else snprintf(out, out_size, "the engine %s before it was ready", how);
}

bool eproc_wait_ready(EngineProcess *p, int timeout_sec, volatile const int *cancel, char *err,
                      size_t err_size) {
  CURL *curl = curl_easy_init();
  CHECK(curl);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 2000L);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, discard);
  int64_t deadline = clock_now_ns() + timeout_sec * INT64_C(1000000000);
  bool ready = false;
  for (;;) {
    if (*cancel) {
      snprintf(err, err_size, "interrupted while waiting for the engine");
      break;
    }
    if (!eproc_alive(p)) {
      describe_exit(p, err, err_size);
      break;
    }
    if (http_ok(curl, p->port, "/health") || http_ok(curl, p->port, "/v1/models")) {
      ready = true;
      break;
    }
    if (clock_now_ns() > deadline) {
      char line[512];
      eproc_last_error_line(p->log_path, line, sizeof line);
      snprintf(err, err_size, "not ready after %d s (ready_timeout)%s%s", timeout_sec,
               line[0] ? "; last log line: " : "", line);
      break;
    }
    sleep_ns(POLL_NS);
  }
  curl_easy_cleanup(curl);
  return ready;
}

static bool mentions_error(const char *s, size_t len) {
  static const char word[] = "error";
  for (size_t i = 0; i + 5 <= len; i++) {
    size_t k = 0;
    while (k < 5 && tolower((unsigned char)s[i + k]) == word[k]) k++;
    if (k == 5) return true;
  }
  return false;
}

void eproc_last_error_line(const char *log_path, char *out, size_t out_size) {
  Buf text = {0};
  char err[256];
  out[0] = '\0';
  if (!file_read_all(log_path, &text, err, sizeof err)) return;
  const char *last_error = NULL, *last_any = NULL;
  size_t last_error_len = 0, last_any_len = 0;
  for (size_t start = 0; start < text.len;) {
    const char *nl = memchr(text.data + start, '\n', text.len - start);
    size_t end = nl ? (size_t)(nl - text.data) : text.len;
    const char *line = text.data + start;
    size_t len = end - start;
    while (len && isspace((unsigned char)line[len - 1])) len--;
    while (len && isspace((unsigned char)*line)) line++, len--;
    if (len) {
      last_any = line, last_any_len = len;
      if (mentions_error(line, len)) last_error = line, last_error_len = len;
    }
    start = end + 1;
  }
  if (last_error) snprintf(out, out_size, "%.*s", (int)last_error_len, last_error);
  else if (last_any) snprintf(out, out_size, "%.*s", (int)last_any_len, last_any);
  buf_free(&text);
}

void eproc_stop(EngineProcess *p, int grace_sec) {
  if (p->pid <= 0) return;
  if (eproc_alive(p)) {
    kill(-p->pid, SIGTERM);
    int64_t deadline = clock_now_ns() + grace_sec * INT64_C(1000000000);
    while (eproc_alive(p) && clock_now_ns() < deadline) sleep_ns(50 * INT64_C(1000000));
  }
  kill(-p->pid, SIGKILL);  // the leader's children too, even when the leader already exited
  if (!p->exited) {
    int status = 0;
    while (waitpid(p->pid, &status, 0) < 0 && errno == EINTR) {
    }
    p->exited = true;
    p->exit_status = status;
  }
  int64_t deadline = clock_now_ns() + PORT_WAIT_NS;
  while (!port_bindable(p->port) && clock_now_ns() < deadline) sleep_ns(POLL_NS);
}

void eproc_free(EngineProcess *p) {
  free(p->log_path);
  *p = (EngineProcess){0};
}
