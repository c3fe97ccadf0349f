// slurm.c: the three commands through common/command, their outputs parsed: sbatch --parsable
// prints "ID[;CLUSTER]"; squeue -h --states=all -o '%i|%T|%r|%N' one job a line; sacct -n -X -P
// -o State,NodeList "STATE[ by UID]|NODES".
#include "sweep/slurm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/check.h"
#include "common/command.h"
#include "common/fields.h"

const char *slurm_missing_command(void) {
  static const char *const needed[] = {"sbatch", "squeue", "scancel"};
  for (size_t i = 0; i < sizeof needed / sizeof *needed; i++)
    if (!command_on_path(needed[i])) return needed[i];
  return NULL;
}

// The output's last non-empty line, without its newline, into out.
static void last_line(const Buf *output, char *out, size_t out_size) {
  const char *text = output->data ? output->data : "";
  size_t end = strlen(text);
  while (end && (text[end - 1] == '\n' || text[end - 1] == '\r')) end--;
  size_t begin = end;
  while (begin && text[begin - 1] != '\n') begin--;
  snprintf(out, out_size, "%.*s", (int)(end - begin), text + begin);
}

bool slurm_submit(char *const *options, size_t num_options, const char *script, long *job_id,
                  char *err, size_t err_size) {
  char **argv = xcalloc(num_options + 4, sizeof *argv);
  size_t n = 0;
  argv[n++] = "sbatch";
  argv[n++] = "--parsable";
  for (size_t i = 0; i < num_options; i++) argv[n++] = options[i];
  argv[n++] = (char *)script;
  Buf out = {0};
  int rc = command_run(argv, &out);
  free(argv);
  char line[1024];
  last_line(&out, line, sizeof line);
  char *end;
  long id = strtol(line, &end, 10);
  bool ok = rc == 0 && end != line && id > 0 && (*end == '\0' || *end == ';');
  if (ok) *job_id = id;
  else snprintf(err, err_size, "sbatch: %s", line[0] ? line : "failed with no message");
  buf_free(&out);
  return ok;
}

static void set_text(char **field, const char *value, size_t len) {
  free(*field);
  *field = xmalloc(len + 1);
  memcpy(*field, value, len);
  (*field)[len] = '\0';
}

// What sacct remembers of a job squeue has forgotten (no accounting: UNKNOWN).
static void ask_sacct(SweepSlurmJob *job) {
  char id[32];
  snprintf(id, sizeof id, "%ld", job->job_id);
  char *argv[] = {"sacct", "-n", "-X", "-P", "-o", "State,NodeList", "-j", id, NULL};
  Buf out = {0};
  int rc = command_run(argv, &out);
  char line[1024], *fields[2];
  last_line(&out, line, sizeof line);
  buf_free(&out);
  if (rc != 0 || !line[0] || fields_split(line, '|', fields, 2) != 2) {
    set_text(&job->state, "UNKNOWN", 7);
    set_text(&job->reason, "squeue and sacct no longer know the job", 39);
    return;
  }
  set_text(&job->state, fields[0], strcspn(fields[0], " "));  // "CANCELLED by 0"
  set_text(&job->node, fields[1], strlen(fields[1]));
}

bool slurm_poll(SweepSlurmJob *const *jobs, size_t n, char *err, size_t err_size) {
  if (n == 0) return true;
  Buf ids = {0}, out = {0};
  for (size_t i = 0; i < n; i++) buf_printf(&ids, "%s%ld", i ? "," : "", jobs[i]->job_id);
  char *argv[] = {"squeue", "-h", "--states=all", "-o", "%i|%T|%r|%N", "-j", ids.data, NULL};
  int rc = command_run(argv, &out);
  // squeue fails the whole call for a job id it has purged; the others are then asked alone.
  if (rc != 0 && n > 1 && out.data && strstr(out.data, "Invalid job id")) {
    buf_free(&ids);
    buf_free(&out);
    for (size_t i = 0; i < n; i++)
      if (!slurm_poll(&jobs[i], 1, err, err_size)) return false;
    return true;
  }
  bool ok = rc == 0 || (out.data && strstr(out.data, "Invalid job id"));
  if (!ok) {
    char line[1024];
    last_line(&out, line, sizeof line);
    snprintf(err, err_size, "squeue: %s", line[0] ? line : "failed with no message");
  }
  bool *seen = xcalloc(n, sizeof *seen);
  for (char *line = out.data, *next; ok && rc == 0 && line && *line; line = next) {
    next = strchr(line, '\n');
    if (next) *next++ = '\0';
    char *fields[4];
    if (fields_split(line, '|', fields, 4) != 4) continue;
    long id = strtol(fields[0], NULL, 10);
    for (size_t i = 0; i < n; i++) {
      if (jobs[i]->job_id != id) continue;
      seen[i] = true;
      set_text(&jobs[i]->state, fields[1], strlen(fields[1]));
      set_text(&jobs[i]->reason, fields[2], strlen(fields[2]));
      if (fields[3][0] && strcmp(fields[3], "(null)") != 0)
        set_text(&jobs[i]->node, fields[3], strlen(fields[3]));
    }
  }
  for (size_t i = 0; ok && i < n; i++)
    if (!seen[i]) ask_sacct(jobs[i]);
  free(seen);
  buf_free(&ids);
  buf_free(&out);
  return ok;
}

bool slurm_state_is_final(const char *state) {
  static const char *const final[] = {"COMPLETED", "FAILED",        "CANCELLED", "TIMEOUT",
                                      "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED", "BOOT_FAIL",
                                      "DEADLINE",  "REVOKED",       "SPECIAL_EXIT", "UNKNOWN"};
  for (size_t i = 0; state && i < sizeof final / sizeof *final; i++)
    if (strcmp(state, final[i]) == 0) return true;
  return false;
}

void slurm_cancel(const long *ids, size_t n) {
  if (n == 0) return;
  char **argv = xcalloc(n + 2, sizeof *argv);
  argv[0] = "scancel";
  for (size_t i = 0; i < n; i++) {
    argv[i + 1] = xmalloc(24);
    snprintf(argv[i + 1], 24, "%ld", ids[i]);
  }
  Buf out = {0};
  command_run(argv, &out);
  buf_free(&out);
  for (size_t i = 0; i < n; i++) free(argv[i + 1]);
  free(argv);
}
