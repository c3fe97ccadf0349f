// progress_bar.c: the drawing thread of progress_bar.h. In place it redraws every 200 ms (and
// clears what a longer earlier line left); in line mode it prints only when a new quarter of the
// total is reached, so a CI log gets at most four lines per bar.
#include "common/progress_bar.h"

#include <stdlib.h>

#include "common/check.h"
#include "common/clock.h"

#define REDRAW_NS (200 * INT64_C(1000000))
#define POLL_NS (50 * INT64_C(1000000))
#define BAR_WIDTH 24

void progress_bar_format(const ProgressBar *b, size_t done, int64_t now_ns, char *out,
                         size_t out_size) {
  double sec = (double)(now_ns - b->start_ns) / 1e9;
  const char *sep = b->label[0] ? " " : "";
  if (!b->in_place) {
    snprintf(out, out_size, "%s%s%zu/%zu requests (%zu%%), %.1f s", b->label,
             b->label[0] ? ": " : "", done, b->total, b->total ? done * 100 / b->total : 100, sec);
    return;
  }
  char bar[BAR_WIDTH + 1];
  size_t filled = b->total ? done * BAR_WIDTH / b->total : BAR_WIDTH;
  for (size_t i = 0; i < BAR_WIDTH; i++) bar[i] = i < filled ? '#' : '-';
  bar[BAR_WIDTH] = '\0';
  snprintf(out, out_size, "%s%s[%s] %zu/%zu requests, %.1f s", b->label, sep, bar, done, b->total,
           sec);
}

// Line mode: a line when done reaches a quarter not printed yet; at the end also a count not
// printed yet (work that stopped short), so the log shows where it ended.
static void draw_lines(ProgressBar *b, size_t done, bool final) {
  size_t quarters = b->total ? done * 4 / b->total : 4;
  if (quarters <= b->quarters_shown && !(final && done != b->last_shown)) return;
  b->quarters_shown = quarters;
  b->last_shown = done;
  char line[512];
  progress_bar_format(b, done, clock_now_ns(), line, sizeof line);
  fprintf(b->out, "%s\n", line);
  fflush(b->out);
}

static void draw_in_place(const ProgressBar *b, size_t done) {
  char line[512];
  progress_bar_format(b, done, clock_now_ns(), line, sizeof line);
  fprintf(b->out, "\r%s\033[K", line);  // \033[K: clear the rest of the terminal line
  fflush(b->out);
}

static void *bar_main(void *arg) {
  ProgressBar *b = arg;
  int64_t next_draw = 0;
  while (!atomic_load(&b->stop)) {
    size_t done = atomic_load(b->done);
    if (!b->in_place) draw_lines(b, done, false);
    else if (clock_now_ns() >= next_draw) {
      draw_in_place(b, done);
      next_draw = clock_now_ns() + REDRAW_NS;
    }
    clock_sleep_until_ns(clock_now_ns() + POLL_NS);
  }
  return NULL;
}

void progress_bar_start(ProgressBar *b, FILE *out, bool in_place, const char *label, size_t total,
                        const atomic_size_t *done) {
  *b = (ProgressBar){.out = out, .label = xstrdup(label ? label : ""), .total = total,
                     .done = done, .in_place = in_place, .start_ns = clock_now_ns(),
                     .last_shown = SIZE_MAX};
  atomic_init(&b->stop, false);
  CHECK(pthread_create(&b->thread, NULL, bar_main, b) == 0);
}

void progress_bar_finish(ProgressBar *b) {
  atomic_store(&b->stop, true);
  pthread_join(b->thread, NULL);
  size_t done = atomic_load(b->done);
  if (b->in_place) {
    draw_in_place(b, done);
    fputc('\n', b->out);
    fflush(b->out);
  } else {
    draw_lines(b, done, true);
  }
  free(b->label);
  b->label = NULL;
}
