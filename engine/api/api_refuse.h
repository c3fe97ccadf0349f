// api_refuse.h: refuses the request fields that would change the output and that this engine
// does not implement (400 naming the field), so that none is silently ignored.
#ifndef GE_API_API_REFUSE_H
#define GE_API_API_REFUSE_H

#include <cjson/cJSON.h>
#include <stdbool.h>

#include "api/api_error.h"

enum { API_REFUSE_CHAT = 1, API_REFUSE_COMPLETIONS = 2 };

// False with err (400, the field named) when req holds such a field with a value other than its
// default; route is API_REFUSE_CHAT or API_REFUSE_COMPLETIONS.
bool api_refuse_unsupported(const cJSON *req, unsigned route, ApiError *err);

#endif
