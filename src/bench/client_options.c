// client_options.c: ClientOptions as the client reads them: endpoint names, the checks made
// before a run, the header list every request carries, curl's global set-up. Sends nothing.
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "bench/client_internal.h"
#include "common/buf.h"
#include "common/check.h"

bool client_endpoint_from_name(const char *name, EndpointType *out) {
  if (strcmp(name, "openai") == 0 || strcmp(name, "vllm") == 0)
    *out = ENDPOINT_COMPLETIONS;
  else if (strcmp(name, "openai-chat") == 0)
    *out = ENDPOINT_CHAT;
  else
    return false;
  return true;
}

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

bool client_options_check(const ClientOptions *o, char *err, size_t err_size) {
  bool chat = o->endpoint == ENDPOINT_CHAT;
  const char *suffix = chat ? "chat/completions" : "completions";
  if (!o->url || !o->model) {
    snprintf(err, err_size, "the client needs a URL and a model name");
    return false;
  }
  if (!ends_with(o->url, suffix) && !ends_with(o->url, "profile")) {
    snprintf(err, err_size,
             "endpoint type %s needs a URL ending in '%s', got '%s' (set --endpoint to %s)",
             chat ? "openai-chat" : "openai", suffix, o->url,
             chat ? "/v1/chat/completions" : "/v1/completions");
    return false;
  }
  if (o->num_threads > 1 && o->max_concurrency && o->max_concurrency < o->num_threads) {
    snprintf(err, err_size, "%u client threads need a concurrency cap of at least %u (got %u)",
             o->num_threads, o->num_threads, o->max_concurrency);
    return false;
  }
  if (o->timeout_ns < 0) {
    snprintf(err, err_size, "the request timeout must not be negative");
    return false;
  }
  return true;
}

static void global_init_once(void) { CHECK(curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK); }

void client_global_init(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, global_init_once);
}

// Whether one of o's extra headers is named like line's ("Name: ..."), case-insensitively: it
// replaces that built-in one, as a dict update does in vLLM.
static bool overridden(const ClientOptions *o, const char *line) {
  size_t len = (size_t)(strchr(line, ':') - line);
  for (size_t i = 0; i < o->num_headers; i++)
    if (strncasecmp(o->headers[i], line, len) == 0 && o->headers[i][len] == ':') return true;
  return false;
}

struct curl_slist *client_headers(const ClientOptions *o) {
  Buf auth = {0};
  buf_printf(&auth, "Authorization: Bearer %s", o->api_key ? o->api_key : "None");
  struct curl_slist *list = NULL;
  static const char content_type[] = "Content-Type: application/json";
  if (!overridden(o, content_type)) list = curl_slist_append(list, content_type);
  if (!overridden(o, auth.data)) list = curl_slist_append(list, auth.data);
  for (size_t i = 0; i < o->num_headers; i++) list = curl_slist_append(list, o->headers[i]);
  list = curl_slist_append(list, "Expect:");
  CHECK(list != NULL);
  buf_free(&auth);
  return list;
}

long client_timeout_ms(int64_t timeout_ns) {
  return timeout_ns > 0 ? (long)((timeout_ns + 999999) / 1000000) : 0L;
}
