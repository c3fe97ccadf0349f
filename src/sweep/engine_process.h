// engine_process.h: one engine server as a child process: started in its own process group with
// stdout and stderr in its log file and extra environment variables (argv and environment only,
// never a shell; the kernel sends it SIGTERM if the harness dies first); the wait for /health
// (or /v1/models); the last error line of its log; the stop (SIGTERM to the group, a grace
// period, SIGKILL, then a wait until the port is free). Knows nothing of sweep files, workloads
// or results.
#ifndef GB_SWEEP_ENGINE_PROCESS_H
#define GB_SWEEP_ENGINE_PROCESS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct {
  pid_t pid;       // also the process group id; 0 when not running
  int port;
  char *log_path;
  int exit_status; // wait status once it exited on its own
  bool exited;
} EngineProcess;

// A TCP port on 127.0.0.1 that was free a moment ago (bind to port 0, read it, close). 0 on failure.
int eproc_free_port(void);

// Starts argv[0] (looked up in PATH when it has no '/') with env (NAME=value items) added to this
// process's environment. False with err when the log cannot be opened or fork fails; a program
// that cannot be executed shows up as an early exit with the reason in the log.
bool eproc_start(EngineProcess *p, char *const *argv, char *const *env, size_t num_env, int port,
                 const char *log_path, char *err, size_t err_size);

// Polls http://127.0.0.1:port/health, then /v1/models, until one answers 200. False with err when
// the process exits first (its last error line), timeout_sec passes, or *cancel becomes non-zero.
bool eproc_wait_ready(EngineProcess *p, int timeout_sec, volatile const int *cancel, char *err,
                      size_t err_size);

// True while the process (group leader) runs; reaps it once it exited.
bool eproc_alive(EngineProcess *p);

// How a process that exited ended: "exited with status N" or "killed by signal N".
void eproc_describe_exit(const EngineProcess *p, char *out, size_t out_size);

// The log's last line that mentions an error, else its last non-empty line ("" when empty).
void eproc_last_error_line(const char *log_path, char *out, size_t out_size);

// SIGTERM to the group, up to grace_sec for it to exit, SIGKILL to the group, reap, then up to
// 30 s until the port can be bound again. Safe on a process that already exited.
void eproc_stop(EngineProcess *p, int grace_sec);

void eproc_free(EngineProcess *p);

#endif
