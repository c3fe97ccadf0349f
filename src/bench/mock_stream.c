// mock_stream.c: mock-server's per-request event plan and chunk bytes. The chunk JSON is written
// from a per-request prefix (id, object, created, model, already escaped) plus fixed ASCII words,
// so producing an event needs no JSON library and no allocation once the buffers have grown:
// the mock must not be the bottleneck when it measures the client. Must not sleep or block.
#include "bench/mock_stream.h"

#include "common/clock.h"

// Each is one o200k token and needs no JSON escaping; token j of request n is WORDS[(n+j) % 8].
static const char *const WORDS[] = {" the", " of", " and", " to", " in", " a", " is", " that"};
enum { NUM_WORDS = sizeof WORDS / sizeof *WORDS };

void mock_stream_init(MockStream *m, const MockStreamPlan *plan) {
  m->plan = *plan;
  m->phase = MOCK_STREAMING;
  m->num_events = m->tokens_sent = 0;
  if (m->plan.tokens_per_event == 0) m->plan.tokens_per_event = 1;
  buf_clear(&m->prefix);
  buf_printf(&m->prefix,
             "{\"id\":\"%s-mock-%llu\",\"object\":\"%s\",\"created\":%lld,\"model\":%s,"
             "\"choices\":",
             plan->chat ? "chatcmpl" : "cmpl", (unsigned long long)plan->number,
             plan->chat ? "chat.completion.chunk" : "text_completion", (long long)plan->created,
             plan->model_json);
}

void mock_stream_free(MockStream *m) { buf_free(&m->prefix); }

int64_t mock_stream_next_due(const MockStream *m) {
  return m->plan.first_due_ns + (int64_t)m->num_events * m->plan.itl_ns;
}

// ": t=<send time>", then "data: ": the caller writes the event's data and ends it.
static void begin_event(Buf *out) {
  buf_printf(out, ": t=%lld\n\ndata: ", (long long)clock_now_ns());
}

// A chunk's start, up to "choices":: the caller writes the rest of the chunk and ends it.
static void begin_chunk(const MockStream *m, Buf *out) {
  begin_event(out);
  buf_append(out, m->prefix.data, m->prefix.len);
}

static void end_chunk(Buf *out) { buf_append_str(out, "}\n\n"); }

static void role_chunk(const MockStream *m, Buf *out) {
  begin_chunk(m, out);
  buf_append_str(out,
                 "[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},"
                 "\"logprobs\":null,\"finish_reason\":null}]");
  end_chunk(out);
}

static void token_chunk(MockStream *m, Buf *out) {
  const MockStreamPlan *p = &m->plan;
  uint32_t n = p->num_tokens - m->tokens_sent;
  if (n > p->tokens_per_event) n = p->tokens_per_event;
  begin_chunk(m, out);
  buf_append_str(out,
                 p->chat ? "[{\"index\":0,\"delta\":{\"content\":\"" : "[{\"index\":0,\"text\":\"");
  for (uint32_t i = 0; i < n; i++)
    buf_append_str(out, WORDS[(p->number + m->tokens_sent + i) % NUM_WORDS]);
  m->tokens_sent += n;
  buf_printf(out, "\"%s,\"logprobs\":null,\"finish_reason\":%s}]", p->chat ? "}" : "",
             m->tokens_sent == p->num_tokens && !p->unfinished ? "\"length\"" : "null");
  end_chunk(out);
}

// llama-server's way of aborting a stream inside its 200 answer; nothing follows it.
static void error_event(MockStream *m, Buf *out) {
  begin_event(out);
  buf_append_str(out,
                 "{\"error\":{\"code\":500,\"message\":\"mock-server: injected error event\","
                 "\"type\":\"server_error\"}}\n\n");
  m->phase = MOCK_DONE;
}

static void final_chunks(MockStream *m, Buf *out) {
  const MockStreamPlan *p = &m->plan;
  if (p->error_event) {  // the answer ended before the error's point: the error ends it
    error_event(m, out);
    return;
  }
  if (p->unfinished) {  // the body just ends
    m->phase = MOCK_DONE;
    return;
  }
  if (p->include_usage) {
    begin_chunk(m, out);
    buf_printf(out,
               "[],\"usage\":{\"prompt_tokens\":%u,\"total_tokens\":%llu,"
               "\"completion_tokens\":%u}",
               p->prompt_tokens, (unsigned long long)p->prompt_tokens + p->num_tokens,
               p->num_tokens);
    end_chunk(out);
  }
  begin_event(out);
  buf_append_str(out, "[DONE]\n\n");
  m->phase = MOCK_DONE;
}

void mock_stream_produce(MockStream *m, int64_t now_ns, Buf *out) {
  const MockStreamPlan *p = &m->plan;
  while (m->phase == MOCK_STREAMING && mock_stream_next_due(m) <= now_ns) {
    if (m->tokens_sent >= p->num_tokens) {  // nothing to generate: only the end
      final_chunks(m, out);
      break;
    }
    if (p->cut_after >= 0 && m->tokens_sent >= p->cut_after) {
      m->phase = MOCK_CUT;
      break;
    }
    if (p->error_event && m->tokens_sent >= p->error_after) {
      error_event(m, out);
      break;
    }
    if (p->chat && m->num_events == 0) role_chunk(m, out);
    token_chunk(m, out);
    m->num_events++;
    if (m->tokens_sent == p->num_tokens) final_chunks(m, out);
  }
}
