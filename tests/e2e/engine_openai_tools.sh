#!/usr/bin/env bash
# engine_openai_tools.sh: reasoning, tool calls and /v1/responses through the official OpenAI Node
# SDK (openai_sdk.bash). gpt-oss-tiny's dummy weights never write harmony, so each scenario's
# server is started with GPTOSS_TEST_FORCED_OUTPUT (the model's output scripted token by token)
# and GPTOSS_TEST_CURRENT_DATE (a fixed system-message date), the tool scenario with async
# scheduling; tests/e2e/sdk-scripted/*.cjs assert on the SDK's typed objects.
# Usage: engine_openai_tools.sh BUILD_DIR (prints TAP).
set -u
. tests/e2e/openai_sdk.bash
sdk_begin "${1:?usage: engine_openai_tools.sh BUILD_DIR}"
export GPTOSS_TEST_CURRENT_DATE=2026-12-04

scenario() {  # script output flags args...: one server scripted with output, one .cjs against it
  local script=$1 output=$2 flags=$3; shift 3
  # shellcheck disable=SC2086  # flags: words
  GPTOSS_TEST_FORCED_OUTPUT=$output sdk_serve $flags || { echo "Bail out! serve did not start"; exit 1; }
  sdk_run "tests/e2e/sdk-scripted/$script" "$@"
  kill "$server_pid"; wait "$server_pid" 2>/dev/null
}

scenario reasoning.cjs '<|channel|>analysis<|message|>The user greets.<|end|><|start|>assistant<|channel|>final<|message|>Hello there!<|return|>' ""

# What a call and its output add to the history, rendered as vLLM renders them.
call='{"city":"Paris"}'
history="<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>$call<|call|><|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>{\"temp\":21}<|end|>"
added=$(printf '%s' "$history" | "$build/bin/gptoss-bench" tokenize --count --allow-special)
scenario tools.cjs "<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>$call<|call|>" \
  --async-scheduling "$added"  # the script also holds when step N+1 is planned before N ends
tap_done
