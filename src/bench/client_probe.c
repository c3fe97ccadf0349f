// client_probe.c: what the bench command asks an endpoint before a run: vLLM's ready check (the
// first request, retried until it succeeds or time runs out) and the first model id of
// /v1/models. Blocking calls; must not print anything (the caller owns the console).
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/client_internal.h"
#include "common/buf.h"
#include "common/check.h"
#include "common/clock.h"

bool client_ready_check(const ClientOptions *o, const BenchRequest *req, int64_t timeout_ns,
                        int64_t retry_interval_ns, RequestResult *out) {
  ClientOptions one = *o;
  one.request_id_prefix = NULL;  // vLLM's test request carries no id
  one.num_threads = 1;
  one.num_finished = NULL;
  *out = (RequestResult){0};
  int64_t deadline_ns = clock_now_ns() + timeout_ns;
  for (int64_t left = timeout_ns; left > 0; left = deadline_ns - clock_now_ns()) {
    one.timeout_ns = o->timeout_ns > 0 && o->timeout_ns < left ? o->timeout_ns : left;
    request_result_free(out);
    int64_t now = clock_now_ns();
    char err[256];
    if (!client_run(&one, req, &now, 1, out, NULL, err, sizeof err)) return false;  // out says why
    if (out->success) return true;
    int64_t retry_at = clock_now_ns() + retry_interval_ns;
    if (retry_at > deadline_ns) retry_at = deadline_ns;
    for (int64_t t = clock_now_ns(); t < retry_at && !(o->cancel && *o->cancel); t = clock_now_ns())
      clock_sleep_until_ns(t + 100000000 < retry_at ? t + 100000000 : retry_at);
    if (o->cancel && *o->cancel) return false;  // out holds the last attempt
  }
  if (!out->generated_text) {  // no attempt was made
    out->prompt_len = req->prompt_len;
    out->failure = FAILURE_TIMEOUT;
    out->generated_text = xstrdup("");
    out->error = xstrdup("the ready check timed out before its first attempt");
  }
  return false;
}

static size_t collect_body(char *data, size_t size, size_t nmemb, void *userp) {
  buf_append(userp, data, size * nmemb);
  return size * nmemb;
}

static bool first_id(const char *body, char **id) {
  cJSON *root = cJSON_Parse(body);
  const cJSON *models = cJSON_GetObjectItemCaseSensitive(root, "data");
  const cJSON *name = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(models, 0), "id");
  bool ok = cJSON_IsString(name);
  if (ok) *id = xstrdup(name->valuestring);
  cJSON_Delete(root);
  return ok;
}

bool client_first_model_id(const ClientOptions *o, const char *models_url, char **id, char *err,
                           size_t err_size) {
  client_global_init();
  CURL *easy = curl_easy_init();
  CHECK(easy != NULL);
  struct curl_slist *headers = client_headers(o);
  Buf body = {0};
  char curl_error[CURL_ERROR_SIZE] = "";
  curl_easy_setopt(easy, CURLOPT_URL, models_url);
  curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, collect_body);
  curl_easy_setopt(easy, CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, curl_error);
  curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, client_timeout_ms(o->timeout_ns));
  CURLcode rc = curl_easy_perform(easy);
  long status = 0;
  curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
  bool ok = false;
  if (rc != CURLE_OK)
    snprintf(err, err_size, "GET %s: %s", models_url,
             curl_error[0] ? curl_error : curl_easy_strerror(rc));
  else if (status != 200)
    snprintf(err, err_size, "GET %s: HTTP %ld", models_url, status);
  else if (!(ok = body.data && first_id(body.data, id)))
    snprintf(err, err_size,
             "GET %s: no model id in the answer (expected {\"data\": [{\"id\": ...}]})",
             models_url);
  buf_free(&body);
  curl_slist_free_all(headers);
  curl_easy_cleanup(easy);
  return ok;
}
