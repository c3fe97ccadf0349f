// prose.h: a corpus of real English prose gathered from text files (licence texts and Debian
// copyright files), for the synthetic ShareGPT dataset. Keeps paragraphs that read as prose and
// drops headers, file lists, addresses and code; never modifies or writes files.
#ifndef GB_BENCH_PROSE_H
#define GB_BENCH_PROSE_H

#include <stdbool.h>
#include <stddef.h>

#include "common/buf.h"

typedef struct {
  Buf text;               // the kept paragraphs, each on one line, separated by "\n\n"
  size_t num_paragraphs;  // distinct paragraphs kept (duplicates across files are dropped)
  size_t num_files;       // files read (unreadable, binary and non-UTF-8 files are skipped)
} ProseCorpus;

// Reads every regular file matched by the shell patterns (a directory stands for the files in
// it), in sorted order per pattern. Returns false with a message when they yield less than
// min_bytes of prose.
bool prose_load(ProseCorpus *c, const char *const *patterns, size_t num_patterns,
                size_t min_bytes, char *err, size_t err_size);
void prose_free(ProseCorpus *c);

#endif
