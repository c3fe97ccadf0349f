// http_server.c: daemon binding (getaddrinfo, epoll, suspend/resume, ephemeral port) and whole
// answers on libmicrohttpd. Must not block a daemon thread.
#include "common/http_server.h"

#include <netdb.h>
#include <stdio.h>
#include <string.h>

enum {
  MAX_CONNECTIONS = 100000,
  // Pending connections the listening socket queues (the kernel caps it at net.core.somaxconn):
  // a benchmark opens its 1,000+ streams at once, and a connect that overflows the queue waits
  // for the client's SYN retransmit (1 s, then 3 s, ...), which lands in its TTFT.
  LISTEN_BACKLOG = 4096,
};

struct MHD_Daemon *http_listen(const HttpListenOptions *o, uint16_t *bound_port, char *err,
                               size_t err_size) {
  struct addrinfo hints = {
      .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
  struct addrinfo *addr = NULL;
  char port[8];
  snprintf(port, sizeof port, "%u", o->port);
  int rc = getaddrinfo(o->host, port, &hints, &addr);
  if (rc != 0) {
    snprintf(err, err_size, "%s: cannot resolve host '%s': %s", o->who, o->host, gai_strerror(rc));
    return NULL;
  }
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
                   (addr->ai_family == AF_INET6 ? MHD_USE_IPv6 : 0);
  static const struct MHD_OptionItem no_options[] = {{MHD_OPTION_END, 0, NULL}};
  struct MHD_Daemon *d = MHD_start_daemon(
      flags, o->port, NULL, NULL, o->on_request, o->cls, MHD_OPTION_SOCK_ADDR, addr->ai_addr,
      MHD_OPTION_NOTIFY_COMPLETED, o->on_completed, o->cls, MHD_OPTION_THREAD_POOL_SIZE,
      o->num_threads > 1 ? o->num_threads : 0u, MHD_OPTION_CONNECTION_LIMIT,
      (unsigned)MAX_CONNECTIONS, MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)LISTEN_BACKLOG,
      MHD_OPTION_ARRAY, o->extra_options ? o->extra_options : no_options, MHD_OPTION_END);
  freeaddrinfo(addr);
  if (!d) {
    snprintf(err, err_size, "%s: cannot listen on %s:%u (port in use?)", o->who, o->host, o->port);
    return NULL;
  }
  const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
  *bound_port = info ? info->port : o->port;
  return d;
}

enum MHD_Result http_reply(struct MHD_Connection *conn, unsigned status, const char *content_type,
                           const char *body, size_t len) {
  struct MHD_Response *resp =
      MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
  MHD_add_response_header(resp, "Content-Type", content_type);
  enum MHD_Result ret = MHD_queue_response(conn, status, resp);
  MHD_destroy_response(resp);
  return ret;
}

enum MHD_Result http_reply_json(struct MHD_Connection *conn, unsigned status, cJSON *root) {
  char *text = cJSON_PrintUnformatted(root);
  cJSON_Delete(root);
  enum MHD_Result ret = http_reply(conn, status, "application/json", text, strlen(text));
  cJSON_free(text);
  return ret;
}

cJSON *http_error_body(const char *type, const char *message, const char *param, const char *code) {
  cJSON *error = cJSON_CreateObject();
  cJSON_AddStringToObject(error, "message", message);
  cJSON_AddStringToObject(error, "type", type);
  if (param)
    cJSON_AddStringToObject(error, "param", param);
  else
    cJSON_AddNullToObject(error, "param");
  if (code)
    cJSON_AddStringToObject(error, "code", code);
  else
    cJSON_AddNullToObject(error, "code");
  cJSON *root = cJSON_CreateObject();
  cJSON_AddItemToObject(root, "error", error);
  return root;
}

enum MHD_Result http_reply_error(struct MHD_Connection *conn, unsigned status, const char *type,
                                 const char *message, const char *param) {
  return http_reply_json(conn, status, http_error_body(type, message, param, NULL));
}
