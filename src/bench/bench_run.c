// bench_run.c: one benchmark run: workload -> ready check -> warmups -> the timed run -> vLLM's
// report and result JSON. Glue only: each step is another module's; this file decides their order
// and prints vLLM's lines around them. Returns errors; never exits (the sweep calls it in-process).
#include "bench/bench_run.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/arrivals.h"
#include "bench/dataset_select.h"
#include "bench/http_client.h"
#include "bench/metrics.h"
#include "bench/pyfmt.h"
#include "bench/report.h"
#include "common/buf.h"
#include "common/check.h"
#include "common/clock.h"
#include "common/file.h"
#include "common/progress_bar.h"

#define READY_RETRY_NS (5 * INT64_C(1000000000))  // vLLM retries the test request every 5 s

// ---------------------------------------------------------------------------------------------
// setup

// Fails with "bench: " and the message of the step that failed.
static bool fail(char *err, size_t err_size, const char *what) {
  snprintf(err, err_size, "bench: %s", what);
  return false;
}

static bool metrics_options(const BenchOptions *o, MetricsOptions *m, char *err, size_t err_size) {
  char e[512];
  metrics_options_init(m);
  if (!metrics_parse_percentile_metrics(m, o->percentile_metrics, e, sizeof e) ||
      !metrics_parse_metric_percentiles(m, o->metric_percentiles, e, sizeof e) ||
      (o->num_goodput && !metrics_parse_goodput(m, o->goodput, (size_t)o->num_goodput, e, sizeof e)) ||
      !report_check_metadata(o->metadata, (size_t)o->num_metadata, e, sizeof e))
    return fail(err, err_size, e);
  return true;
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
      .logprobs = o->logprobs,
      .headers = (const char *const *)o->header_lines,
      .num_headers = (size_t)o->num_header,
      .ignore_eos = o->ignore_eos,
      .extra_body = o->extra_body,
      .api_key = getenv("OPENAI_API_KEY"),
      .request_id_prefix = o->request_id_prefix,
      .max_concurrency = (uint32_t)o->max_concurrency,
      .timeout_ns = (int64_t)(o->request_timeout_sec * 1e9),
      .num_threads = (uint32_t)o->num_client_threads,
      .busy_poll = o->busy_poll,
  };
  CHECK(client_endpoint_from_name(o->endpoint_type, &c.endpoint));  // validated by the parser
  return c;
}

static bool load_dataset(const BenchOptions *o, const Tokenizer *tok, FILE *out, Dataset *d,
                         char *err, size_t err_size) {
  char e[1024];
  return dataset_from_options(o, tok, out, d, e, sizeof e) || fail(err, err_size, e);
}

// ---------------------------------------------------------------------------------------------
// the run

static bool ready_check(const BenchOptions *o, const ClientOptions *c, const Dataset *d, FILE *out,
                        char *err, size_t err_size) {
  if (o->ready_check_timeout_sec <= 0) {
    fputs("Skipping endpoint ready check.\n", out);
    return true;
  }
  fputs("Starting initial single prompt test run...\n", out);
  fprintf(out, "Waiting for endpoint to become up in %d seconds\n", o->ready_check_timeout_sec);
  fflush(out);
  ClientOptions probe = *c;
  probe.request_id_prefix = NULL;  // vLLM's test request carries no id
  RequestResult r = {0};
  bool ok = client_ready_check(&probe, &d->requests[0],
                               o->ready_check_timeout_sec * INT64_C(1000000000), READY_RETRY_NS, &r);
  if (!ok)
    snprintf(err, err_size,
             "Initial test run failed - Please make sure benchmark arguments are correctly "
             "specified. Error: %s",
             r.error ? r.error : "no answer");
  request_result_free(&r);
  if (ok) fputs("Initial test run completed. Starting main benchmark run...\n", out);
  return ok;
}

static bool warmup(const BenchOptions *o, const ClientOptions *c, const Dataset *d, FILE *out,
                   char *err, size_t err_size) {
  if (o->num_warmups == 0) return true;
  size_t n = (size_t)o->num_warmups;
  fprintf(out, "Warming up with %zu requests...\n", n);
  fflush(out);
  BenchRequest *reqs = xmalloc(n * sizeof *reqs);
  int64_t *due = xmalloc(n * sizeof *due);
  RequestResult *results = xcalloc(n, sizeof *results);
  for (size_t i = 0; i < n; i++) {
    reqs[i] = d->requests[i % d->num_requests];
    due[i] = 0;
  }
  ClientOptions warm = *c;
  warm.request_id_prefix = NULL;
  char e[512];
  bool ok = client_run(&warm, reqs, due, n, results, NULL, e, sizeof e);
  size_t num_failed = 0;
  for (size_t i = 0; i < n; i++) {
    num_failed += !results[i].success;
    request_result_free(&results[i]);
  }
  if (ok) fprintf(out, "Warmup run completed (%zu of %zu failed).\n", num_failed, n);
  else snprintf(err, err_size, "bench: warmup: %s", e);
  free(results);
  free(due);
  free(reqs);
  return ok;
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

static void print_traffic(const BenchOptions *o, FILE *out) {
  char rate[PYFMT_FLOAT_LEN], burst[PYFMT_FLOAT_LEN];
  pyfmt_float_repr(o->request_rate, rate);
  pyfmt_float_repr(o->burstiness, burst);
  if (o->ramp_up_strategy) {
    fprintf(out, "Traffic ramp-up strategy: %s.\n", o->ramp_up_strategy);
    fprintf(out, "Will increase RPS from %d to %d RPS over the duration of the benchmark.\n",
            o->ramp_up_start_rps, o->ramp_up_end_rps);
  } else {
    fprintf(out, "Traffic request rate: %s\n", rate);
  }
  fprintf(out, "Burstiness factor: %s (%s)\n", burst,
          o->burstiness == 1.0 ? "Poisson process" : "Gamma distribution");
  if (o->max_concurrency) fprintf(out, "Maximum request concurrency: %d\n", o->max_concurrency);
  else fputs("Maximum request concurrency: None\n", out);
  fflush(out);
}

static ArrivalParams arrival_params(const BenchOptions *o) {
  ArrivalParams ap = {.request_rate = o->request_rate, .burstiness = o->burstiness, .seed = o->seed};
  if (o->ramp_up_strategy) {
    ap.ramp_up = strcmp(o->ramp_up_strategy, "linear") == 0 ? ARRIVALS_RAMP_LINEAR
                                                             : ARRIVALS_RAMP_EXPONENTIAL;
    ap.ramp_up_start_rps = o->ramp_up_start_rps;
    ap.ramp_up_end_rps = o->ramp_up_end_rps;
  }
  return ap;
}

// Python's datetime.now().isoformat() of the wall time start_wall + offset_ns.
static json_t *iso_time(struct timespec start_wall, int64_t offset_ns) {
  int64_t ns = (int64_t)start_wall.tv_nsec + offset_ns;
  time_t sec = start_wall.tv_sec + (time_t)(ns / 1000000000);
  long usec = (long)(ns % 1000000000) / 1000;
  struct tm tm;
  localtime_r(&sec, &tm);
  char text[64], stamp[40];
  strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
  if (usec) snprintf(text, sizeof text, "%s.%06ld", stamp, usec);
  else snprintf(text, sizeof text, "%s", stamp);
  return json_string(text);
}

// vLLM's rps_change_events of a ramp-up: each stamped when its request is due.
static json_t *rps_change_events(const ArrivalParams *ap, size_t n, const int64_t *offsets_ns,
                                 struct timespec start_wall) {
  int *rps;
  size_t *first;
  size_t num = arrivals_rps_changes(ap, n, &rps, &first);
  json_t *events = json_array();
  for (size_t k = 0; k < num; k++)
    json_array_append_new(events, json_pack("{s:i, s:o}", "rps", rps[k], "timestamp",
                                            iso_time(start_wall, first[k] == SIZE_MAX
                                                                     ? 0
                                                                     : offsets_ns[first[k]])));
  free(rps);
  free(first);
  return events;
}

// Runs the timed benchmark; *duration_ns gets its duration (vLLM: from just before the first
// arrival delay to when the last request finished); with ramp-up, *rps_events vLLM's
// rps_change_events (else NULL).
static bool timed_run(const BenchOptions *o, const BenchRunIo *io, ClientOptions *c,
                      const Dataset *d, RequestResult *results, int64_t *duration_ns,
                      json_t **rps_events, char *err, size_t err_size) {
  size_t n = d->num_requests;
  ArrivalParams ap = arrival_params(o);
  int64_t *due = xmalloc(n * sizeof *due);
  char e[512];
  if (!arrivals_schedule(&ap, n, due, e, sizeof e)) {
    free(due);
    return fail(err, err_size, e);
  }

  // vLLM shows a tqdm bar on stderr; the sweep wants one in its logs too (plain lines).
  atomic_size_t num_finished = 0;
  ProgressBar bar;
  bool tty = isatty(STDERR_FILENO);
  bool show_progress = !o->disable_tqdm && (tty || io->progress_label);
  c->num_finished = &num_finished;
  if (show_progress) progress_bar_start(&bar, stderr, tty, io->progress_label, n, &num_finished);

  struct timespec start_wall;
  clock_gettime(CLOCK_REALTIME, &start_wall);
  *rps_events = o->ramp_up_strategy ? rps_change_events(&ap, n, due, start_wall) : NULL;
  int64_t start_ns = clock_now_ns();
  for (size_t i = 0; i < n; i++) due[i] += start_ns;
  bool ok = client_run(c, d->requests, due, n, results, NULL, e, sizeof e);
  *duration_ns = clock_now_ns() - start_ns;

  if (show_progress) progress_bar_finish(&bar);
  c->num_finished = NULL;
  free(due);
  return ok || fail(err, err_size, e);
}

// ---------------------------------------------------------------------------------------------
// results

static bool save_result(const BenchOptions *o, const BenchRunIo *io, const ReportContext *ctx,
                        const BenchMetrics *m, const RequestResult *results, size_t n, char *err,
                        size_t err_size) {
  char name[1024], e[1024];
  if (o->result_filename) snprintf(name, sizeof name, "%s", o->result_filename);
  else report_result_filename(ctx, name, sizeof name);
  Buf path = {0};
  if (io->result_path) buf_append_str(&path, io->result_path);
  else {
    if (o->result_dir) {
      if (!file_make_dirs(o->result_dir, e, sizeof e)) {
        snprintf(err, err_size, "bench: --result-dir: %s", e);
        buf_free(&path);
        return false;
      }
      buf_printf(&path, "%s/", o->result_dir);
    }
    buf_append_str(&path, name);
  }
  bool ok = report_write_json(path.data, ctx, m, results, n, e, sizeof e);
  buf_free(&path);
  return ok || fail(err, err_size, e);
}

bool bench_run(const BenchOptions *opts, const BenchRunIo *io, char *err, size_t err_size) {
  BenchOptions o = *opts;
  MetricsOptions mo;
  if (!metrics_options(&o, &mo, err, err_size)) return false;
  FILE *out = io->out;
  char e[1024];
  Buf base = {0}, url = {0}, models_url = {0};
  base_url(&o, &base);
  buf_printf(&url, "%s%s", base.data, o.endpoint);
  buf_printf(&models_url, "%s/v1/models", base.data);
  ClientOptions c = client_options(&o, url.data);
  c.cancel = io->cancel;
  char *discovered_model = NULL;
  Dataset d = {0};
  RequestResult *results = NULL;
  json_t *rps_events = NULL;  // vLLM's rps_change_events of a ramp-up
  bool ok = false, have_data = false;
  if (!o.model) {
    if (!client_first_model_id(&c, models_url.data, &discovered_model, e, sizeof e)) {
      snprintf(err, err_size, "bench: --model not given and %s (pass --model NAME)", e);
      goto done;
    }
    o.model = discovered_model;
  }
  c.model = o.served_model_name ? o.served_model_name : o.model;
  if (!client_options_check(&c, e, sizeof e)) {
    fail(err, err_size, e);
    goto done;
  }
  if (!load_dataset(&o, io->tok, out, &d, err, err_size)) goto done;
  have_data = true;
  if (!ready_check(&o, &c, &d, out, err, err_size) || !warmup(&o, &c, &d, out, err, err_size))
    goto done;
  print_traffic(&o, out);

  results = xcalloc(d.num_requests, sizeof *results);
  int64_t duration_ns;
  if (!timed_run(&o, io, &c, &d, results, &duration_ns, &rps_events, err, err_size)) goto done;
  if (io->cancel && *io->cancel) {  // not a measurement: neither reported nor saved
    fail(err, err_size, "cancelled");
    goto done;
  }
  resolve_output_tokens(io->tok, results, d.num_requests);
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
                       .ramp_up_strategy = o.ramp_up_strategy,
                       .ramp_up_start_rps = o.ramp_up_start_rps,
                       .ramp_up_end_rps = o.ramp_up_end_rps,
                       .rps_change_events = rps_events,
                       .backend = o.backend,
                       .dataset_name = d.name,
                       .save_detailed = o.save_detailed,
                       .append_result = o.append_result};
  report_print(out, &ctx, &m);
  fflush(out);
  report_print_warnings(stderr, &m);
  ok = !(io->result_path || o.save_result || o.append_result) ||
       save_result(&o, io, &ctx, &m, results, d.num_requests, err, err_size);

done:
  json_decref(rps_events);
  if (results)
    for (size_t i = 0; i < d.num_requests; i++) request_result_free(&results[i]);
  free(results);
  if (have_data) dataset_free(&d);
  free(discovered_model);
  buf_free(&base);
  buf_free(&url);
  buf_free(&models_url);
  return ok;
}
