// api_chat.c: chat message validation and their mapping onto an ApiConversation. Builds texts
// in buffers owned for the call only; must not touch the request's JSON beyond reading it.
#include "api/api_chat.h"

#include <stdio.h>
#include <string.h>

#include "api/api_conversation.h"
#include "common/buf.h"

static const cJSON *get(const cJSON *o, const char *key) {
  return cJSON_GetObjectItemCaseSensitive(o, key);
}

// A message's text into out: a string, or the concatenated "text" of a list of text parts.
// null is accepted (as "") when null_ok (assistant and tool messages, as vLLM takes them).
static bool content_text(const cJSON *content, bool null_ok, size_t i, Buf *out, ApiError *err) {
  buf_append(out, "", 0);
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
    const cJSON *type = get(part, "type"), *text = get(part, "text");
    if (!cJSON_IsString(type) || strcmp(type->valuestring, "text") != 0 || !cJSON_IsString(text))
      return api_error(err, 400, "messages",
                       "messages[%zu].content: only {\"type\": \"text\", \"text\": ...} parts are "
                       "supported",
                       i);
    buf_append_str(out, text->valuestring);
  }
  return true;
}

static bool check_effort(const char *effort, ApiError *err) {
  if (!effort || strcmp(effort, "low") == 0 || strcmp(effort, "medium") == 0 ||
      strcmp(effort, "high") == 0)
    return true;
  return api_error(err, 400, "reasoning_effort",
                   "reasoning_effort must be \"low\", \"medium\" or \"high\"");
}

// The function name of the tool call with this id among the messages' tool calls, or NULL.
static const char *call_name(const cJSON *messages, const char *id) {
  const cJSON *m, *call;
  cJSON_ArrayForEach(m, messages) {
    cJSON_ArrayForEach(call, get(m, "tool_calls")) {
      const cJSON *cid = get(call, "id"), *name = get(get(call, "function"), "name");
      if (cJSON_IsString(cid) && cJSON_IsString(name) && strcmp(cid->valuestring, id) == 0)
        return name->valuestring;
    }
  }
  return NULL;
}

static bool add_tool_calls(ApiConversation *c, const cJSON *calls, size_t i, ApiError *err) {
  if (!cJSON_IsArray(calls))
    return api_error(err, 400, "messages", "messages[%zu].tool_calls must be a list", i);
  const cJSON *call;
  cJSON_ArrayForEach(call, calls) {
    const cJSON *fn = get(call, "function");
    const cJSON *name = get(fn, "name"), *args = get(fn, "arguments");
    if (!cJSON_IsString(name) || !(cJSON_IsString(args) || !args || cJSON_IsNull(args)))
      return api_error(err, 400, "messages",
                       "messages[%zu].tool_calls: each needs function.name and "
                       "function.arguments strings",
                       i);
    char recipient[160];
    snprintf(recipient, sizeof recipient, "functions.%s", name->valuestring);
    api_conv_add(c, "assistant", "commentary", recipient, "json",
                 cJSON_IsString(args) ? args->valuestring : "");
  }
  return true;
}

static bool add_assistant(ApiConversation *c, const cJSON *m, const char *text, size_t i,
                          ApiError *err) {
  const cJSON *reasoning = get(m, "reasoning");
  if (!cJSON_IsString(reasoning)) reasoning = get(m, "reasoning_content");
  const char *thought = cJSON_IsString(reasoning) && reasoning->valuestring[0]
                            ? reasoning->valuestring
                            : NULL;
  const cJSON *calls = get(m, "tool_calls");
  if (calls && !cJSON_IsNull(calls) && (!cJSON_IsArray(calls) || cJSON_GetArraySize(calls) > 0)) {
    if (text[0]) api_conv_add(c, "assistant", "commentary", NULL, NULL, text);
    if (thought) api_conv_add(c, "assistant", "analysis", NULL, NULL, thought);
    return add_tool_calls(c, calls, i, err);
  }
  if (thought) api_conv_add(c, "assistant", "analysis", NULL, NULL, thought);
  if (text[0]) api_conv_add(c, "assistant", "final", NULL, NULL, text);
  return true;
}

static bool add_tool_output(ApiConversation *c, const cJSON *messages, const cJSON *m,
                            const char *text, size_t i, ApiError *err) {
  const cJSON *id = get(m, "tool_call_id");
  const char *name = cJSON_IsString(id) ? call_name(messages, id->valuestring) : NULL;
  if (!name)
    return api_error(err, 400, "messages",
                     "messages[%zu]: a tool message needs the tool_call_id of an earlier "
                     "assistant tool call",
                     i);
  char role[160];
  snprintf(role, sizeof role, "functions.%s", name);
  api_conv_add(c, role, "commentary", "assistant", NULL, text);
  return true;
}

static bool add_message(ApiConversation *c, const cJSON *messages, const cJSON *m, size_t i,
                        Buf *instructions, ApiError *err) {
  const cJSON *role = get(m, "role");
  if (!cJSON_IsString(role))
    return api_error(err, 400, "messages", "messages[%zu].role must be a string", i);
  const char *r = role->valuestring;
  bool assistant = strcmp(r, "assistant") == 0, tool = strcmp(r, "tool") == 0;
  bool system = strcmp(r, "system") == 0 || strcmp(r, "developer") == 0;
  if (!assistant && !tool && !system && strcmp(r, "user") != 0)
    return api_error(err, 400, "messages",
                     "messages[%zu].role \"%.40s\" is not supported (use system, developer, "
                     "user, assistant or tool)",
                     i, r);
  Buf text = {0};
  bool ok = content_text(get(m, "content"), assistant || tool, i, &text, err);
  if (ok && system && i == 0) {
    buf_append_str(instructions, text.data);
  } else if (ok && system) {
    Buf dev = {0};
    buf_printf(&dev, "# Instructions\n\n%s", text.data);
    api_conv_add(c, "developer", NULL, NULL, NULL, dev.data);
    buf_free(&dev);
  } else if (ok && assistant) {
    ok = add_assistant(c, m, text.data, i, err);
  } else if (ok && tool) {
    ok = add_tool_output(c, messages, m, text.data, i, err);
  } else if (ok) {
    api_conv_add(c, "user", NULL, NULL, NULL, text.data);
  }
  buf_free(&text);
  return ok;
}

bool api_chat_render(const cJSON *messages, const ApiChatOptions *o, const Tokenizer *t,
                     TokenIds *out, ApiError *err) {
  if (!check_effort(o->reasoning_effort, err)) return false;
  if (!cJSON_IsArray(messages)) return api_error(err, 400, "messages", "messages must be a list");
  if (cJSON_GetArraySize(messages) == 0)
    return api_error(err, 400, "messages", "messages must not be empty");
  ApiConversation c = {0};
  Buf instructions = {0};
  bool ok = true;
  size_t i = 0;
  const cJSON *m;
  cJSON_ArrayForEach(m, messages) {
    if (!(ok = add_message(&c, messages, m, i++, &instructions, err))) break;
  }
  if (ok) {
    ApiPreamble p = {.current_date = o->current_date,
                     .reasoning_effort = o->reasoning_effort,
                     .instructions = instructions.data,
                     .tools = o->tools};
    api_conv_render(&c, &p, t, out);
  }
  buf_free(&instructions);
  api_conv_free(&c);
  return ok;
}
