// progress_bar.h: a count of finished items (completed/total requests) shown on a stream while
// the work runs, from a thread of its own: redrawn in place on a terminal, or, for logs that are
// not one (CI), a plain line at each quarter of the total (and where it stopped, if short of
// it). Reads the counter the worker increments; knows nothing of what is counted.
#ifndef GB_COMMON_PROGRESS_BAR_H
#define GB_COMMON_PROGRESS_BAR_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct {
  FILE *out;
  char *label;                // printed before the bar ("" for none)
  size_t total;
  const atomic_size_t *done;  // the worker's counter
  bool in_place;              // terminal: "\r" + the line, every 200 ms; else quarter lines
  int64_t start_ns;
  size_t quarters_shown;      // line mode: quarters already printed
  size_t last_shown;          // line mode: the count last printed (SIZE_MAX: none yet)
  atomic_bool stop;
  pthread_t thread;
} ProgressBar;

// Starts drawing until progress_bar_finish.
void progress_bar_start(ProgressBar *b, FILE *out, bool in_place, const char *label, size_t total,
                        const atomic_size_t *done);
// Stops the thread, draws the final count (in place: then ends the line) and frees the label.
void progress_bar_finish(ProgressBar *b);

// The text of one state (no "\r", no newline), for the drawing and the tests:
// in place "LABEL [#####---------------] 8/16 requests, 2.1 s",
// a line   "LABEL: 8/16 requests (50%), 2.1 s".
void progress_bar_format(const ProgressBar *b, size_t done, int64_t now_ns, char *out,
                         size_t out_size);

#endif
