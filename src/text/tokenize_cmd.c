// tokenize_cmd.c: `gptoss-bench tokenize`: raw text on stdin -> ids, ids -> text (--decode), or
// one JSON object per line (--jsonl). Reads the file whole; errors name the input line.
#include "text/tokenize_cmd.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/check.h"
#include "common/file.h"
#include "text/stream_decoder.h"
#include "text/tokenizer.h"

typedef struct {
  TokEncoding encoding;
  bool allow_special;
  bool count_only;
  bool decode;
  const char *jsonl_path;  // NULL: raw stdin
  const char *vocab_path;  // NULL: the default
} TokenizeOptions;

static const char USAGE[] =
    "usage: gptoss-bench tokenize [--encoding o200k_base|o200k_harmony] [--allow-special]\n"
    "                             [--count] [--decode] [--jsonl FILE|-] [--vocab FILE]\n"
    "  Reads text from stdin and prints its token ids on one line.\n"
    "  --encoding NAME   o200k_harmony (default, GPT-OSS) or o200k_base\n"
    "  --allow-special   special-token text such as <|start|> becomes its id (default: plain text)\n"
    "  --count           print only the number of tokens\n"
    "  --decode          read ids (whitespace-separated) and print their text\n"
    "  --jsonl FILE      one JSON object per line: {\"text\": ...} -> {\"ids\": [...]}\n"
    "                    (--decode: {\"ids\": [...]} -> {\"text\": ...}; --count: {\"count\": N})\n"
    "  --vocab FILE      o200k_base.tiktoken to use (default: datasets/tokenizer/)\n";

static TokenizeOptions parse_options(int argc, char **argv) {
  TokenizeOptions o = {.encoding = TOK_O200K_HARMONY};
  static const struct option longopts[] = {
      {"encoding", required_argument, 0, 'e'}, {"allow-special", no_argument, 0, 's'},
      {"count", no_argument, 0, 'c'},          {"decode", no_argument, 0, 'd'},
      {"jsonl", required_argument, 0, 'j'},    {"vocab", required_argument, 0, 'v'},
      {"help", no_argument, 0, 'h'},           {0, 0, 0, 0}};
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
    switch (c) {
      case 'e':
        if (!tok_encoding_from_name(optarg, &o.encoding))
          die("tokenize: --encoding '%s' is unknown; use o200k_base or o200k_harmony", optarg);
        break;
      case 's': o.allow_special = true; break;
      case 'c': o.count_only = true; break;
      case 'd': o.decode = true; break;
      case 'j': o.jsonl_path = optarg; break;
      case 'v': o.vocab_path = optarg; break;
      case 'h': fputs(USAGE, stdout); exit(0);
      case ':': die("tokenize: %s needs a value\n%s", argv[optind - 1], USAGE);
      default: die("tokenize: unknown option '%s'\n%s", argv[optind - 1], USAGE);
    }
  }
  if (optind < argc) die("tokenize: unexpected argument '%s'\n%s", argv[optind], USAGE);
  if (o.decode && (o.count_only || o.allow_special))
    die("tokenize: --decode cannot be combined with --count or --allow-special");
  return o;
}

static void print_ids(const TokenIds *ids) {
  for (size_t i = 0; i < ids->len; i++) printf(i ? " %u" : "%u", ids->data[i]);
  putchar('\n');
}

static void check_ids(const Tokenizer *t, const TokenIds *ids, const char *where) {
  for (size_t i = 0; i < ids->len; i++)
    if (!tok_id_bytes(t, ids->data[i], &(size_t){0}))
      die("%s: token id %u is not in %s (its ids are %s)", where, ids->data[i],
          t->encoding == TOK_O200K_BASE ? "o200k_base" : "o200k_harmony",
          t->encoding == TOK_O200K_BASE ? "0..199997, 199999 and 200018" : "0..201087");
}

// ---------------------------------------------------------------------------------------------
// raw mode

static void run_raw(const Tokenizer *t, const TokenizeOptions *o) {
  Buf input = {0};
  char err[512];
  if (!file_read_all("-", &input, err, sizeof err)) die("tokenize: %s", err);
  TokenIds ids = {0};
  if (o->decode) {
    char *p = input.data, *end;
    for (;;) {
      while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r' || *p == ',') p++;
      if (!*p) break;
      errno = 0;
      unsigned long id = strtoul(p, &end, 10);
      if (end == p || errno || id > UINT32_MAX)
        die("tokenize: stdin: '%.20s' is not a token id (expected whitespace-separated integers)", p);
      token_ids_push(&ids, (uint32_t)id);
      p = end;
    }
    check_ids(t, &ids, "tokenize: stdin");
    Buf text = {0};
    tok_decode(t, ids.data, ids.len, &text);
    fwrite(text.data, 1, text.len, stdout);
    buf_free(&text);
  } else {
    tok_encode(t, input.data, input.len, o->allow_special, &ids);
    if (o->count_only) printf("%zu\n", ids.len);
    else print_ids(&ids);
  }
  token_ids_free(&ids);
  buf_free(&input);
}

// ---------------------------------------------------------------------------------------------
// JSONL mode

static void jsonl_line(const Tokenizer *t, const TokenizeOptions *o, const char *line, size_t len,
                       const char *where) {
  json_error_t jerr;
  json_t *obj = json_loadb(line, len, JSON_ALLOW_NUL, &jerr);
  if (!obj) die("%s: invalid JSON at column %d: %s", where, jerr.column, jerr.text);
  TokenIds ids = {0};
  json_t *result;
  if (o->decode) {
    json_t *arr = json_object_get(obj, "ids");
    if (!json_is_array(arr)) die("%s: expected {\"ids\": [integers]}", where);
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) {
      if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > UINT32_MAX)
        die("%s: ids[%zu] is not a token id (a non-negative integer)", where, i);
      token_ids_push(&ids, (uint32_t)json_integer_value(v));
    }
    check_ids(t, &ids, where);
    Buf text = {0};
    stream_decoder_decode_all(t, ids.data, ids.len, &text);  // JSON needs valid UTF-8
    result = json_pack("{s:s%}", "text", text.data, text.len);
    buf_free(&text);
  } else {
    json_t *text = json_object_get(obj, "text");
    if (!json_is_string(text)) die("%s: expected {\"text\": \"...\"}", where);
    tok_encode(t, json_string_value(text), json_string_length(text), o->allow_special, &ids);
    if (o->count_only) {
      result = json_pack("{s:I}", "count", (json_int_t)ids.len);
    } else {
      json_t *arr = json_array();
      for (size_t i = 0; i < ids.len; i++) json_array_append_new(arr, json_integer(ids.data[i]));
      result = json_pack("{s:o}", "ids", arr);
    }
  }
  CHECK(result != NULL);
  char *out = json_dumps(result, JSON_COMPACT);
  puts(out);
  free(out);
  json_decref(result);
  json_decref(obj);
  token_ids_free(&ids);
}

static void run_jsonl(const Tokenizer *t, const TokenizeOptions *o) {
  Buf input = {0};
  char err[512];
  if (!file_read_all(o->jsonl_path, &input, err, sizeof err)) die("tokenize: %s", err);
  const char *name = strcmp(o->jsonl_path, "-") == 0 ? "stdin" : o->jsonl_path;
  size_t line_no = 0;
  for (char *p = input.data, *end = p + input.len; p < end;) {
    char *eol = memchr(p, '\n', (size_t)(end - p));
    if (!eol) eol = end;
    line_no++;
    size_t len = (size_t)(eol - p);
    if (len && p[len - 1] == '\r') len--;
    if (len) {
      char where[600];
      snprintf(where, sizeof where, "tokenize: %s:%zu", name, line_no);
      jsonl_line(t, o, p, len, where);
    }
    p = eol + 1;
  }
  buf_free(&input);
}

int tokenize_cmd_main(int argc, char **argv) {
  TokenizeOptions o = parse_options(argc, argv);
  Tokenizer t;
  char err[1024];
  if (!tok_init(&t, o.encoding, o.vocab_path, err, sizeof err))
    die("tokenize: %s (or point GPTOSS_TOKENIZER_FILE / --vocab at o200k_base.tiktoken)", err);
  if (o.jsonl_path) run_jsonl(&t, &o);
  else run_raw(&t, &o);
  tok_free(&t);
  return fflush(stdout) == 0 ? 0 : 1;
}
