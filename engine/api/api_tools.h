// api_tools.h: OpenAI function tools -> the harmony developer message's "# Tools" section, as
// openai-harmony renders DeveloperContent.with_function_tools (the form vLLM sends gpt-oss): a
// "namespace functions { ... }" of TypeScript-like types, each parameters JSON schema written
// the way harmony writes it (descriptions, titles and examples as // comments, "?" for optional
// properties, string enums as unions, oneOf as "| " lines, defaults as trailing comments).
// Also validates the request's tools (chat: {type: function, function: {...}}; responses:
// {type: function, name, ...}). Reads the request's JSON only; never renders tokens.
#ifndef GE_API_API_TOOLS_H
#define GE_API_API_TOOLS_H

#include <cjson/cJSON.h>
#include <stdbool.h>

#include "api/api_error.h"
#include "common/buf.h"

// One function tool, pointing into the request's JSON.
typedef struct {
  const char *name;
  const char *description;  // NULL: none
  const cJSON *parameters;  // a JSON schema object, or NULL: takes no arguments
} ApiTool;

typedef struct {
  ApiTool *items;  // owned array; strings point into the request
  size_t num_items;
} ApiTools;

// Parses a request's "tools" value (absent/null: none). nested: chat's form (the function under
// "function"); else the Responses API's flat form. Built-in tools (web_search_preview,
// code_interpreter, file_search, mcp, ...) are refused with 400. False with err.
bool api_tools_parse(const cJSON *tools, bool nested, ApiTools *out, ApiError *err);
void api_tools_free(ApiTools *t);

// harmony's TypeScript-like type for a JSON schema (json_schema_to_typescript), appended to out.
void api_tools_schema_type(const cJSON *schema, const char *indent, Buf *out);

// The developer message's text: "# Instructions\n\n<instructions>" (when given), then the
// "# Tools\n\n## functions\n\nnamespace functions {...} // namespace functions" section (when
// there are tools), joined by a blank line.
void api_tools_developer_text(const char *instructions, const ApiTools *tools, Buf *out);

#endif
