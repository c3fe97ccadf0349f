// harmony.h: OpenAI's harmony chat format for GPT-OSS. Rendering: messages -> the prompt ids the
// model expects (spec gptoss-model.md section 7). Parsing: generated ids -> messages on their
// channels (analysis, commentary, final), incrementally, so a server can stream reasoning and
// content separately. Needs an o200k_harmony Tokenizer.
#ifndef GB_TEXT_HARMONY_H
#define GB_TEXT_HARMONY_H

#include <stdbool.h>

#include "common/buf.h"
#include "text/stream_decoder.h"
#include "text/token_ids.h"
#include "text/tokenizer.h"

typedef struct {
  const char *role;          // "system", "developer", "user", "assistant", or a tool's name
  const char *content;       // verbatim text (never scanned for special tokens)
  const char *channel;       // "analysis", "commentary", "final", or NULL
  const char *recipient;     // " to=" target (a tool for assistant calls), or NULL
  const char *content_type;  // e.g. "<|constrain|>json", or NULL
} HarmonyMessage;

// The default system message's settings (harmony's SystemContent::new()).
typedef struct {
  const char *model_identity;    // NULL: "You are ChatGPT, a large language model trained by OpenAI."
  const char *knowledge_cutoff;  // NULL: "2024-06"
  const char *current_date;      // NULL: no date line
  const char *reasoning_effort;  // NULL: "medium"; also "low", "high"
  bool without_commentary;       // "# Valid channels: analysis, final." (vLLM without function
                                 // tools); else analysis, commentary, final (harmony's default)
  bool has_function_tools;       // adds the "Calls to these tools ..." line
} HarmonySystemOptions;

// The text of the system message for opts (NULL = all defaults).
void harmony_system_content(const HarmonySystemOptions *opts, Buf *out);

// Appends one message: <|start|>{header}<|message|>{content}<|end|> (<|call|> for an assistant
// message with a recipient).
void harmony_render_message(const Tokenizer *t, const HarmonyMessage *m, TokenIds *out);

// A whole prompt for completion: the system message (the default one built from opts, unless
// messages[0] is a system message), the messages, then "<|start|>assistant".
void harmony_render_prompt(const Tokenizer *t, const HarmonyMessage *messages, size_t num_messages,
                           const HarmonySystemOptions *opts, TokenIds *out);

// True for the ids that end an assistant turn: <|return|> and <|call|> (harmony's stop tokens for
// assistant actions), and <|endoftext|>. Not <|end|>: it ends one message (e.g. the analysis),
// and stopping there would lose the final answer.
bool harmony_is_stop_token(uint32_t id);

// ---------------------------------------------------------------------------------------------
// incremental parsing of model output (which starts right after "<|start|>assistant")

typedef enum {
  HARMONY_EVENT_NONE,         // a header token or a token that completed no character
  HARMONY_EVENT_CONTENT,      // text appended to the content buffer, on parser->channel
  HARMONY_EVENT_MESSAGE_END,  // <|end|>: the message on parser->channel ended; another may follow
  HARMONY_EVENT_STOP,         // <|return|> or <|call|>: the turn is over
} HarmonyEventKind;

typedef struct {
  bool in_content;        // between <|message|> and its end token
  Buf header;             // text of the header being read ("assistant<|channel|>final")
  char channel[32];       // channel of the current message ("" when none was given)
  char recipient[128];    // recipient of the current message ("" when none)
  StreamDecoder decoder;  // for the content of the current message
} HarmonyParser;

void harmony_parser_init(HarmonyParser *p);
void harmony_parser_free(HarmonyParser *p);

// Feeds one generated id; content text (valid UTF-8) is appended to content.
HarmonyEventKind harmony_parser_push(HarmonyParser *p, const Tokenizer *t, uint32_t id,
                                     Buf *content);

#endif
