#!/usr/bin/env bash
# engine_openai_sdk.sh: `gptoss-engine serve` on gpt-oss-tiny driven by the official OpenAI Node
# SDK (openai_sdk.bash pins it): every tests/e2e/sdk/*.cjs script but tap.cjs runs against one
# server; their checks assert that the SDK's typed objects parse and hold what the API promises.
# Usage: engine_openai_sdk.sh BUILD_DIR (prints TAP).
set -u
build=${1:?usage: engine_openai_sdk.sh BUILD_DIR}
tmp=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
. tests/e2e/tap.bash
. tests/e2e/openai_sdk.bash
[ -x "$build/bin/gptoss-engine" ] || { echo "Bail out! $build/bin/gptoss-engine is not built"; exit 1; }
sdk_install || { echo "Bail out! the OpenAI SDK could not be installed"; exit 1; }
sdk_serve || { echo "Bail out! serve did not start"; exit 1; }
for script in tests/e2e/sdk/*.cjs; do
  [ "$(basename "$script")" = tap.cjs ] || sdk_run "$script"
done
tap_done
