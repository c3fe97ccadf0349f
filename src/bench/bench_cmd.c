// bench_cmd.c: `gptoss-bench bench`: flags -> workload -> ready check -> warmups -> the timed run
// -> vLLM's report and result JSON. Glue only: each step is another module's; this file decides
// their order and prints vLLM's lines around them. Dies with a clear message on bad input.
#include "bench/bench_cmd.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench/arrivals.h"
#include "bench/bench_options.h"
#include "bench/dataset.h"
#include "bench/http_client.h"
#include "bench/metrics.h"
#include "bench/pyfmt.h"
#include "bench/report.h"
#include "common/buf.h"
#include "common/check.h"
#include "common/clock.h"
#include "text/tokenizer.h"

#define READY_RETRY_NS (5 * INT64_C(1000000000))  // vLLM retries the test request every 5 s

// ---------------------------------------------------------------------------------------------
// setup

static MetricsOptions metrics_options(const BenchOptions *o) {
  MetricsOptions m;
  char err[512];
  metrics_options_init(&m);
  if (!metrics_parse_percentile_metrics(&m, o->percentile_metrics, err, sizeof err) ||
      !metrics_parse_metric_percentiles(&m, o->metric_percentiles, err, sizeof err) ||
      (o->num_goodput && !metrics_parse_goodput(&m, o->goodput, (size_t)o->num_goodput, err, sizeof err)) ||
      !report_check_metadata(o->metadata, (size_t)o->num_metadata, err, sizeof err))
    die("bench: %s", err);
  return m;
}

// "http://host:port" or --base-url, without a trailing slash.
static void base_url(const BenchOptions *o, Buf *out) {
  if (o->base_url) buf_append_str(out, o->base_url);
  else buf_printf(out, "http://%s:%d", o->host, o->port);
  while (out->len && out->data[out->len - 1] == '/') out->data[--out->len] = '\0';
}

static ClientOptions client_options(const BenchOptions *o, const char *url) {
  ClientOptions c = {
      .url = url,
      .has_temperature = !isnan(o->temperature),
      .temperature = o->temperature,
      .has_top_p = !isnan(o->top_p),
      .top_p = o->top_p,
      .has_top_k = o->top_k >= 0,
      .top_k = o->top_k,
      .has_min_p = !isnan(o->min_p),
      .min_p = o->min_p,
      .logprobs = -1,
      .ignore_eos = o->ignore_eos,
      .api_key = getenv("OPENAI_API_KEY"),
      .request_id_prefix = o->request_id_prefix,
      .max_concurrency = (uint32_t)o->max_concurrency,
      .timeout_ns = (int64_t)(o->request_timeout_sec * 1e9),
      .num_threads = (uint32_t)o->num_client_threads,
  };
  CHECK(client_endpoint_from_name(o->endpoint_type, &c.endpoint));  // validated by the parser
  return c;
}

static void load_dataset(const BenchOptions *o, const Tokenizer *tok, Dataset *d) {
  char err[1024];
  bool ok;
  if (strcmp(o->dataset_name, "sharegpt") == 0) {
    ShareGptParams p = {.path = o->dataset_path,
                        .num_requests = (size_t)o->num_prompts,
                        .seed = o->seed,
                        .output_len = o->sharegpt_output_len,
                        .no_oversample = o->no_oversample};
    ok = dataset_load_sharegpt(&p, tok, d, err, sizeof err);
    if (ok && d->num_oversampled)
      printf("Oversampled requests to reach %d total samples.\n", o->num_prompts);
  } else {
    RandomParams p = {.num_requests = (size_t)o->num_prompts,
                      .input_len = (uint32_t)o->random_input_len,
                      .output_len = (uint32_t)o->random_output_len,
                      .range_ratio = o->random_range_ratio,
                      .prefix_len = (uint32_t)o->random_prefix_len,
                      .seed = o->seed};
    RandomBounds b;
    ok = dataset_random_bounds(&p, &b, err, sizeof err);
    if (ok) {
      printf("Sampling input_len from [%u, %u] and output_len from [%u, %u]\n", b.input_lo,
             b.input_hi, b.output_lo, b.output_hi);
      ok = dataset_make_random(&p, tok, d, err, sizeof err);
    }
  }
  if (!ok) die("bench: %s", err);
}

// ---------------------------------------------------------------------------------------------
// the run

typedef struct {
  atomic_size_t num_finished;
  atomic_bool done;
  size_t num_total;
} Progress;

// A one-line counter on stderr (vLLM shows a tqdm bar there), when stderr is a terminal.
static void *progress_main(void *arg) {
  Progress *p = arg;
  while (!atomic_load(&p->done)) {
    fprintf(stderr, "\r%zu/%zu requests", atomic_load(&p->num_finished), p->num_total);
    usleep(200000);
  }
  fprintf(stderr, "\r%zu/%zu requests\n", atomic_load(&p->num_finished), p->num_total);
  return NULL;
}

static void ready_check(const BenchOptions *o, const ClientOptions *c, const Dataset *d) {
  if (o->ready_check_timeout_sec <= 0) {
    puts("Skipping endpoint ready check.");
    return;
  }
  puts("Starting initial single prompt test run...");
  printf("Waiting for endpoint to become up in %d seconds\n", o->ready_check_timeout_sec);
  fflush(stdout);
  ClientOptions probe = *c;
  probe.request_id_prefix = NULL;  // vLLM's test request carries no id
  RequestResult r = {0};
  bool ok = client_ready_check(&probe, &d->requests[0],
                               o->ready_check_timeout_sec * INT64_C(1000000000), READY_RETRY_NS, &r);
  if (!ok)
    die("Initial test run failed - Please make sure benchmark arguments are correctly specified. "
        "Error: %s",
        r.error ? r.error : "no answer");
  request_result_free(&r);
  puts("Initial test run completed. Starting main benchmark run...");
}

static void warmup(const BenchOptions *o, const ClientOptions *c, const Dataset *d) {
  if (o->num_warmups == 0) return;
  size_t n = (size_t)o->num_warmups;
  printf("Warming up with %zu requests...\n", n);
  fflush(stdout);
  BenchRequest *reqs = xmalloc(n * sizeof *reqs);
  int64_t *due = xmalloc(n * sizeof *due);
  RequestResult *results = xcalloc(n, sizeof *results);
  for (size_t i = 0; i < n; i++) {
    reqs[i] = d->requests[i % d->num_requests];
    due[i] = 0;
  }
  ClientOptions warm = *c;
  warm.request_id_prefix = NULL;
  char err[512];
  if (!client_run(&warm, reqs, due, n, results, NULL, err, sizeof err)) die("bench: warmup: %s", err);
  size_t num_failed = 0;
  for (size_t i = 0; i < n; i++) {
    num_failed += !results[i].success;
    request_result_free(&results[i]);
  }
  printf("Warmup run completed (%zu of %zu failed).\n", num_failed, n);
  free(results);
  free(due);
  free(reqs);
}

// vLLM counts the generated text with the tokenizer when the server sent no usage.
static void resolve_output_tokens(const Tokenizer *tok, RequestResult *results, size_t n) {
  TokenIds ids = {0};
  for (size_t i = 0; i < n; i++) {
    RequestResult *r = &results[i];
    if (!r->success || r->output_tokens || !r->generated_text) continue;
    ids.len = 0;
    tok_encode(tok, r->generated_text, strlen(r->generated_text), true, &ids);
    r->output_tokens = (uint32_t)ids.len;
  }
  token_ids_free(&ids);
}

static void print_traffic(const BenchOptions *o) {
  char rate[PYFMT_FLOAT_LEN], burst[PYFMT_FLOAT_LEN];
  pyfmt_float_repr(o->request_rate, rate);
  pyfmt_float_repr(o->burstiness, burst);
  printf("Traffic request rate: %s\n", rate);
  printf("Burstiness factor: %s (%s)\n", burst,
         o->burstiness == 1.0 ? "Poisson process" : "Gamma distribution");
  if (o->max_concurrency) printf("Maximum request concurrency: %d\n", o->max_concurrency);
  else puts("Maximum request concurrency: None");
  fflush(stdout);
}

// Runs the timed benchmark; returns its duration (vLLM: from just before the first arrival
// delay to when the last request finished).
static int64_t timed_run(const BenchOptions *o, ClientOptions *c, const Dataset *d,
                         RequestResult *results) {
  size_t n = d->num_requests;
  ArrivalParams ap = {.request_rate = o->request_rate, .burstiness = o->burstiness, .seed = o->seed};
  int64_t *due = xmalloc(n * sizeof *due);
  char err[512];
  if (!arrivals_schedule(&ap, n, due, err, sizeof err)) die("bench: %s", err);

  Progress progress = {.num_total = n};
  pthread_t progress_thread;
  bool show_progress = !o->disable_tqdm && isatty(STDERR_FILENO);
  c->num_finished = &progress.num_finished;
  if (show_progress) CHECK(pthread_create(&progress_thread, NULL, progress_main, &progress) == 0);

  int64_t start_ns = clock_now_ns();
  for (size_t i = 0; i < n; i++) due[i] += start_ns;
  if (!client_run(c, d->requests, due, n, results, NULL, err, sizeof err)) die("bench: %s", err);
  int64_t duration_ns = clock_now_ns() - start_ns;

  atomic_store(&progress.done, true);
  if (show_progress) pthread_join(progress_thread, NULL);
  c->num_finished = NULL;
  free(due);
  return duration_ns;
}

// ---------------------------------------------------------------------------------------------
// results

static void make_dirs(const char *dir) {
  Buf path = {0};
  buf_append_str(&path, dir);
  for (size_t i = 1; i <= path.len; i++) {
    if (path.data[i] != '/' && path.data[i] != '\0') continue;
    char saved = path.data[i];
    path.data[i] = '\0';
    if (mkdir(path.data, 0755) != 0 && errno != EEXIST)
      die("bench: --result-dir: cannot create %s: %s", path.data, strerror(errno));
    path.data[i] = saved;
  }
  buf_free(&path);
}

static void save_result(const BenchOptions *o, const ReportContext *ctx, const BenchMetrics *m,
                        const RequestResult *results, size_t n) {
  char name[1024];
  if (o->result_filename) snprintf(name, sizeof name, "%s", o->result_filename);
  else report_result_filename(ctx, name, sizeof name);
  Buf path = {0};
  if (o->result_dir) {
    make_dirs(o->result_dir);
    buf_printf(&path, "%s/", o->result_dir);
  }
  buf_append_str(&path, name);
  char err[1024];
  if (!report_write_json(path.data, ctx, m, results, n, err, sizeof err)) die("bench: %s", err);
  buf_free(&path);
}

int bench_cmd_main(int argc, char **argv) {
  BenchOptions o;
  char err[1024];
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      fputs(BENCH_OPTIONS_USAGE, stdout);
      return 0;
    }
  if (!bench_options_parse(&o, argc, argv, err, sizeof err))
    die("bench: %s\n%s", err, BENCH_OPTIONS_USAGE);
  MetricsOptions mo = metrics_options(&o);

  Tokenizer tok;
  if (!tok_init(&tok, TOK_O200K_HARMONY, NULL, err, sizeof err)) die("bench: %s", err);
  Buf base = {0}, url = {0}, models_url = {0};
  base_url(&o, &base);
  buf_printf(&url, "%s%s", base.data, o.endpoint);
  buf_printf(&models_url, "%s/v1/models", base.data);
  ClientOptions c = client_options(&o, url.data);
  char *discovered_model = NULL;
  if (!o.model) {
    if (!client_first_model_id(&c, models_url.data, &discovered_model, err, sizeof err))
      die("bench: --model not given and %s (pass --model NAME)", err);
    o.model = discovered_model;
  }
  c.model = o.served_model_name ? o.served_model_name : o.model;
  if (!client_options_check(&c, err, sizeof err)) die("bench: %s", err);

  Dataset d;
  load_dataset(&o, &tok, &d);
  ready_check(&o, &c, &d);
  warmup(&o, &c, &d);
  print_traffic(&o);

  RequestResult *results = xcalloc(d.num_requests, sizeof *results);
  int64_t duration_ns = timed_run(&o, &c, &d, results);
  resolve_output_tokens(&tok, results, d.num_requests);
  BenchMetrics m;
  metrics_compute(&m, results, d.num_requests, duration_ns, &mo);

  char date[32];
  time_t now = time(NULL);
  strftime(date, sizeof date, "%Y%m%d-%H%M%S", localtime(&now));
  ReportContext ctx = {.date = date,
                       .endpoint_type = o.endpoint_type,
                       .label = o.label,
                       .model_id = o.model,
                       .tokenizer_id = o.tokenizer ? o.tokenizer : o.model,
                       .num_prompts = o.num_prompts,
                       .metadata = o.metadata,
                       .num_metadata = (size_t)o.num_metadata,
                       .request_rate = o.request_rate,
                       .burstiness = o.burstiness,
                       .max_concurrency = o.max_concurrency,
                       .dataset_name = d.name,
                       .save_detailed = o.save_detailed,
                       .append_result = o.append_result};
  report_print(stdout, &ctx, &m);
  fflush(stdout);
  report_print_warnings(stderr, &m);
  if (o.save_result || o.append_result) save_result(&o, &ctx, &m, results, d.num_requests);

  for (size_t i = 0; i < d.num_requests; i++) request_result_free(&results[i]);
  free(results);
  dataset_free(&d);
  free(discovered_model);
  buf_free(&base);
  buf_free(&url);
  buf_free(&models_url);
  bench_options_free(&o);
  tok_free(&tok);
  return 0;
}
