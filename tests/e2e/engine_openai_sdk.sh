#!/usr/bin/env bash
# engine_openai_sdk.sh: `gptoss-engine serve` on gpt-oss-tiny driven by the official OpenAI Node
# SDK (openai_sdk.bash pins it): every tests/e2e/sdk/*.cjs script but tap.cjs runs against one
# server; their checks assert that the SDK's typed objects parse and hold what the API promises.
# Usage: engine_openai_sdk.sh BUILD_DIR (prints TAP).
set -u
. tests/e2e/openai_sdk.bash
sdk_begin "${1:?usage: engine_openai_sdk.sh BUILD_DIR}"
sdk_serve || { echo "Bail out! serve did not start"; exit 1; }
for script in tests/e2e/sdk/*.cjs; do
  [ "$(basename "$script")" = tap.cjs ] || sdk_run "$script"
done
tap_done
