// api_chat.c: chat message validation and harmony rendering. Builds the messages' texts in
// buffers owned for the call only; must not touch the request's JSON beyond reading it.
#include "api/api_chat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/check.h"
#include "text/harmony.h"

// A message's text into out: a string, or the concatenated "text" of a list of text parts.
// null is accepted (as "") for assistant messages only.
static bool content_text(const cJSON *content, bool null_ok, size_t i, Buf *out, ApiError *err) {
  if (cJSON_IsString(content)) {
    buf_append_str(out, content->valuestring);
    return true;
  }
  if (null_ok && (!content || cJSON_IsNull(content))) return true;
  if (!cJSON_IsArray(content))
    return api_error(err, 400, "messages",
                     "messages[%zu].content must be a string or a list of text parts", i);
  const cJSON *part;
  cJSON_ArrayForEach(part, content) {
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(part, "type");
    const cJSON *text = cJSON_GetObjectItemCaseSensitive(part, "text");
    if (!cJSON_IsString(type) || strcmp(type->valuestring, "text") != 0 || !cJSON_IsString(text))
      return api_error(err, 400, "messages",
                       "messages[%zu].content: only {\"type\": \"text\", \"text\": ...} parts are "
                       "supported",
                       i);
    buf_append_str(out, text->valuestring);
  }
  return true;
}

// The harmony role of an OpenAI message and the prefix its text gets; NULL for unsupported roles.
static const char *harmony_role(const char *role, const char **prefix) {
  *prefix = "";
  if (strcmp(role, "system") == 0 || strcmp(role, "developer") == 0) {
    *prefix = "# Instructions\n\n";
    return "developer";
  }
  if (strcmp(role, "user") == 0 || strcmp(role, "assistant") == 0) return role;
  return NULL;
}

static bool check_effort(const char *effort, ApiError *err) {
  if (!effort || strcmp(effort, "low") == 0 || strcmp(effort, "medium") == 0 ||
      strcmp(effort, "high") == 0)
    return true;
  return api_error(err, 400, "reasoning_effort",
                   "reasoning_effort must be \"low\", \"medium\" or \"high\"");
}

bool api_chat_render(const cJSON *messages, const char *reasoning_effort, const Tokenizer *t,
                     TokenIds *out, ApiError *err) {
  if (!check_effort(reasoning_effort, err)) return false;
  if (!cJSON_IsArray(messages)) return api_error(err, 400, "messages", "messages must be a list");
  size_t n = (size_t)cJSON_GetArraySize(messages);
  if (n == 0) return api_error(err, 400, "messages", "messages must not be empty");
  HarmonyMessage *hm = xcalloc(n, sizeof *hm);
  Buf *texts = xcalloc(n, sizeof *texts);
  bool ok = true;
  size_t i = 0;
  const cJSON *m;
  cJSON_ArrayForEach(m, messages) {
    const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
    const char *prefix;
    if (!cJSON_IsString(role)) {
      ok = api_error(err, 400, "messages", "messages[%zu].role must be a string", i);
      break;
    }
    hm[i].role = harmony_role(role->valuestring, &prefix);
    if (!hm[i].role) {
      ok = api_error(err, 400, "messages",
                     "messages[%zu].role \"%.40s\" is not supported (use system, developer, user "
                     "or assistant)",
                     i, role->valuestring);
      break;
    }
    bool assistant = strcmp(hm[i].role, "assistant") == 0;
    if (assistant && cJSON_GetObjectItemCaseSensitive(m, "tool_calls")) {
      ok = api_error(err, 400, "messages", "messages[%zu]: tool calls are not supported", i);
      break;
    }
    buf_append_str(&texts[i], prefix);
    ok = content_text(cJSON_GetObjectItemCaseSensitive(m, "content"), assistant, i, &texts[i], err);
    if (!ok) break;
    hm[i].content = texts[i].data ? texts[i].data : "";
    hm[i].channel = assistant ? "final" : NULL;
    i++;
  }
  if (ok) {
    HarmonySystemOptions opts = {.reasoning_effort = reasoning_effort};
    harmony_render_prompt(t, hm, n, &opts, out);
  }
  for (size_t j = 0; j < n; j++) buf_free(&texts[j]);
  free(texts);
  free(hm);
  return ok;
}
