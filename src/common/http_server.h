// http_server.h: the libmicrohttpd pieces every server in the project shares (mock-server, the
// engine's API): binding a daemon that serves thousands of connections from internal epoll
// threads with suspend/resume (no thread per connection), and queuing whole answers: text, JSON
// (cJSON) and OpenAI-style error bodies. Knows no routes and keeps no per-request state.
#ifndef GB_COMMON_HTTP_SERVER_H
#define GB_COMMON_HTTP_SERVER_H

#include <cjson/cJSON.h>
#include <microhttpd.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
  const char *who;       // names the server in error messages ("mock-server")
  const char *host;      // bind address, numeric or a name
  uint16_t port;         // 0: an ephemeral port
  unsigned num_threads;  // epoll threads (1: one internal thread)
  MHD_AccessHandlerCallback on_request;
  MHD_RequestCompletedCallback on_completed;
  void *cls;  // passed to both callbacks
  // More libmicrohttpd options (connection notifications, timeouts), ending with MHD_OPTION_END;
  // NULL: none.
  const struct MHD_OptionItem *extra_options;
} HttpListenOptions;

// Starts the daemon and sets *bound_port to the port it listens on. NULL with a message when the
// host cannot be resolved or the address cannot be bound.
struct MHD_Daemon *http_listen(const HttpListenOptions *o, uint16_t *bound_port, char *err,
                               size_t err_size);

// Queues body[len] (copied) with the given status and Content-Type.
enum MHD_Result http_reply(struct MHD_Connection *conn, unsigned status, const char *content_type,
                           const char *body, size_t len);

// Queues root as compact JSON and deletes root.
enum MHD_Result http_reply_json(struct MHD_Connection *conn, unsigned status, cJSON *root);

// OpenAI's error body: {"error": {"message", "type", "param", "code"}}; param and code may be
// NULL (JSON null). code is OpenAI's string identifier ("invalid_api_key"), not the HTTP status:
// the official SDKs read it as a string or null (APIError.code).
cJSON *http_error_body(const char *type, const char *message, const char *param, const char *code);

// Queues http_error_body(type, message, param, NULL) with that status.
enum MHD_Result http_reply_error(struct MHD_Connection *conn, unsigned status, const char *type,
                                 const char *message, const char *param);

#endif
