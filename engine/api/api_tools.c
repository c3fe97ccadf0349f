// api_tools.c: function tools: request validation and harmony's TypeScript-like rendering of
// their JSON schemas (the same cases, in the same order, as openai-harmony's renderer, so that
// the prompt matches what vLLM sends). Must not tokenize or keep the request's JSON past it.
#include "api/api_tools.h"

#include <stdlib.h>
#include <string.h>

#include "common/check.h"

static const cJSON *get(const cJSON *o, const char *key) {
  return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
}

static const char *get_str(const cJSON *o, const char *key) {
  const cJSON *v = get(o, key);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool is_enum(const cJSON *schema) {
  const cJSON *e = get(schema, "enum");
  return cJSON_IsArray(e) && cJSON_GetArraySize(e) > 0;
}

static void append_json(const cJSON *v, Buf *out) {
  char *text = cJSON_PrintUnformatted(v);
  buf_append_str(out, text);
  cJSON_free(text);
}

// "default: ..." for schema's default: a string quoted unless the schema is an enum (then bare
// when bare_enum, else as JSON); anything else as compact JSON.
static void default_text(const cJSON *schema, bool bare_enum, Buf *out) {
  const cJSON *d = get(schema, "default");
  buf_append_str(out, "default: ");
  if (cJSON_IsString(d) && !is_enum(schema))
    buf_printf(out, "\"%s\"", d->valuestring);
  else if (cJSON_IsString(d) && bare_enum)
    buf_append_str(out, d->valuestring);
  else
    append_json(d, out);
}

// The type of schema with " | null" added when it is nullable and says no null yet.
static void nullable_type(const cJSON *schema, const char *indent, Buf *out) {
  Buf type = {0};
  api_tools_schema_type(schema, indent, &type);
  buf_append_str(out, type.data ? type.data : "");
  if (cJSON_IsTrue(get(schema, "nullable")) && !(type.data && strstr(type.data, "null")))
    buf_append_str(out, " | null");
  buf_free(&type);
}

static void indent_more(const char *indent, const char *more, Buf *out) {
  buf_clear(out);
  buf_printf(out, "%s%s", indent, more);
}

// One "| type // comments" line per variant of a oneOf. property_desc: the property's own
// description, NULL for a top-level oneOf (then each variant's line is preceded by a newline).
static void one_of_variants(const cJSON *variants, const char *indent, bool top,
                            const char *property_desc, bool desc_above, Buf *out) {
  Buf deeper = {0};
  indent_more(indent, "   ", &deeper);
  int i = 0;
  const cJSON *v;
  cJSON_ArrayForEach(v, variants) {
    if (top) buf_append_byte(out, '\n');
    buf_printf(out, "%s | ", indent);
    nullable_type(v, deeper.data, out);
    Buf comments = {0};
    const char *desc = get_str(v, "description");
    bool skip = !top && ((i == 0 && desc_above) ||
                         (desc && property_desc && strcmp(desc, property_desc) == 0));
    if (desc && !skip) buf_append_str(&comments, desc);
    if (get(v, "default")) {
      if (comments.len) buf_append_byte(&comments, ' ');
      default_text(v, !top, &comments);
    }
    if (comments.len) buf_printf(out, " // %s", comments.data);
    buf_free(&comments);
    if (!top) buf_append_byte(out, '\n');
    i++;
  }
  buf_free(&deeper);
}

static bool is_required(const cJSON *schema, const char *key) {
  const cJSON *r;
  cJSON_ArrayForEach(r, get(schema, "required")) {
    if (cJSON_IsString(r) && strcmp(r->valuestring, key) == 0) return true;
  }
  return false;
}

static void property(const cJSON *schema, const cJSON *val, const char *indent, Buf *out) {
  const char *key = val->string, *opt = is_required(schema, key) ? "" : "?";
  const char *title = get_str(val, "title"), *desc = get_str(val, "description");
  const cJSON *one_of = get(val, "oneOf");
  if (title) buf_printf(out, "%s// %s\n%s//\n", indent, title, indent);
  if (!one_of && desc) buf_printf(out, "%s// %s\n", indent, desc);
  const cJSON *examples = get(val, "examples");
  if (cJSON_IsArray(examples) && cJSON_GetArraySize(examples) > 0) {
    buf_printf(out, "%s// Examples:\n", indent);
    const cJSON *ex;
    cJSON_ArrayForEach(ex, examples) {
      if (cJSON_IsString(ex)) buf_printf(out, "%s// - \"%s\"\n", indent, ex->valuestring);
    }
  }
  if (cJSON_IsArray(one_of)) {
    const char *first_desc = get_str(cJSON_GetArrayItem(one_of, 0), "description");
    bool above = desc && !(first_desc && strcmp(first_desc, desc) == 0);
    if (above) buf_printf(out, "%s// %s\n", indent, desc);
    if (get(val, "default")) {
      buf_printf(out, "%s// ", indent);
      default_text(val, true, out);
      buf_append_byte(out, '\n');
    }
    buf_printf(out, "%s%s%s:\n", indent, key, opt);
    one_of_variants(one_of, indent, false, desc, above, out);
    buf_printf(out, "%s,\n", indent);
    return;
  }
  Buf deeper = {0};
  indent_more(indent, "    ", &deeper);
  buf_printf(out, "%s%s%s: ", indent, key, opt);
  nullable_type(val, deeper.data, out);
  buf_append_byte(out, ',');
  if (!one_of && get(val, "default")) {
    buf_append_str(out, " // ");
    default_text(val, true, out);
  }
  buf_append_byte(out, '\n');
  buf_free(&deeper);
}

static void object_type(const cJSON *schema, const char *indent, Buf *out) {
  const char *desc = get_str(schema, "description");
  if (desc) buf_printf(out, "%s// %s\n", indent, desc);
  buf_append_str(out, "{\n");
  const cJSON *props = get(schema, "properties");
  const cJSON *val;
  if (cJSON_IsObject(props)) cJSON_ArrayForEach(val, props) property(schema, val, indent, out);
  buf_printf(out, "%s}", indent);
}

static void string_type(const cJSON *schema, Buf *out) {
  size_t before = out->len;
  const cJSON *e;
  cJSON_ArrayForEach(e, get(schema, "enum")) {
    if (!cJSON_IsString(e)) continue;
    buf_printf(out, "%s\"%s\"", out->len > before ? " | " : "", e->valuestring);
  }
  if (out->len == before) buf_append_str(out, "string");
}

void api_tools_schema_type(const cJSON *schema, const char *indent, Buf *out) {
  const cJSON *one_of = get(schema, "oneOf"), *type = get(schema, "type");
  if (cJSON_IsArray(one_of)) {
    one_of_variants(one_of, indent, true, NULL, false, out);
    return;
  }
  if (cJSON_IsArray(type)) {
    size_t before = out->len;
    const cJSON *t;
    cJSON_ArrayForEach(t, type) {
      if (!cJSON_IsString(t)) continue;
      const char *name = strcmp(t->valuestring, "integer") == 0 ? "number" : t->valuestring;
      buf_printf(out, "%s%s", out->len > before ? " | " : "", name);
    }
    if (out->len > before) return;
  }
  const char *ty = cJSON_IsString(type) ? type->valuestring : "";
  if (strcmp(ty, "object") == 0) {
    object_type(schema, indent, out);
  } else if (strcmp(ty, "string") == 0) {
    string_type(schema, out);
  } else if (strcmp(ty, "number") == 0 || strcmp(ty, "integer") == 0) {
    buf_append_str(out, "number");
  } else if (strcmp(ty, "boolean") == 0) {
    buf_append_str(out, "boolean");
  } else if (strcmp(ty, "array") == 0) {
    const cJSON *items = get(schema, "items");
    if (!items) {
      buf_append_str(out, "Array<any>");
      return;
    }
    api_tools_schema_type(items, indent, out);
    buf_append_str(out, "[]");
  } else {
    buf_append_str(out, "any");
  }
}

// "// line" for each line of text (Rust's str::lines: no line for a final newline).
static void comment_lines(const char *text, Buf *out) {
  while (text && *text) {
    size_t n = strcspn(text, "\n");
    size_t len = n && text[n - 1] == '\r' ? n - 1 : n;
    buf_printf(out, "// %.*s\n", (int)len, text);
    text += n + (text[n] == '\n');
  }
}

void api_tools_developer_text(const char *instructions, const ApiTools *tools, Buf *out) {
  if (instructions) buf_printf(out, "# Instructions\n\n%s", instructions);
  if (!tools || tools->num_items == 0) return;
  if (instructions) buf_append_str(out, "\n\n");
  buf_append_str(out, "# Tools\n\n## functions\n\nnamespace functions {\n\n");
  for (size_t i = 0; i < tools->num_items; i++) {
    const ApiTool *t = &tools->items[i];
    comment_lines(t->description, out);
    buf_printf(out, "type %s = (", t->name);
    if (t->parameters) {
      buf_append_str(out, "_: ");
      api_tools_schema_type(t->parameters, "", out);
    }
    buf_append_str(out, ") => any;\n\n");
  }
  buf_append_str(out, "} // namespace functions");
}

// ---------------------------------------------------------------------------------------------
// validation

static bool parse_tool(const cJSON *item, bool nested, size_t i, ApiTool *out, ApiError *err) {
  const char *type = get_str(item, "type");
  if (!type) return api_error(err, 400, "tools", "tools[%zu].type must be a string", i);
  if (strcmp(type, "function") != 0)
    return api_error(err, 400, "tools",
                     "tools[%zu]: tool type \"%.40s\" is not supported (built-in tools need a "
                     "tool server; only function tools are)",
                     i, type);
  const cJSON *fn = nested ? get(item, "function") : item;
  if (!cJSON_IsObject(fn))
    return api_error(err, 400, "tools", "tools[%zu].function must be an object", i);
  const char *name = get_str(fn, "name");
  const cJSON *desc = get(fn, "description"), *params = get(fn, "parameters");
  if (!name || !name[0] || strcspn(name, " <>\n\t") != strlen(name))
    return api_error(err, 400, "tools",
                     "tools[%zu]: the function needs a name without spaces or '<', '>'", i);
  if (desc && !cJSON_IsNull(desc) && !cJSON_IsString(desc))
    return api_error(err, 400, "tools", "tools[%zu]: description must be a string", i);
  if (params && !cJSON_IsNull(params) && !cJSON_IsObject(params))
    return api_error(err, 400, "tools", "tools[%zu]: parameters must be a JSON schema object", i);
  *out = (ApiTool){.name = name,
                   .description = cJSON_IsString(desc) ? desc->valuestring : NULL,
                   .parameters = cJSON_IsObject(params) ? params : NULL};
  return true;
}

bool api_tools_parse(const cJSON *tools, bool nested, ApiTools *out, ApiError *err) {
  *out = (ApiTools){0};
  if (!tools || cJSON_IsNull(tools)) return true;
  if (!cJSON_IsArray(tools)) return api_error(err, 400, "tools", "tools must be a list");
  size_t n = (size_t)cJSON_GetArraySize(tools);
  out->items = xcalloc(n + 1, sizeof *out->items);
  const cJSON *item;
  cJSON_ArrayForEach(item, tools) {
    if (!parse_tool(item, nested, out->num_items, &out->items[out->num_items], err)) {
      api_tools_free(out);
      return false;
    }
    out->num_items++;
  }
  return true;
}

void api_tools_free(ApiTools *t) {
  free(t->items);
  *t = (ApiTools){0};
}
