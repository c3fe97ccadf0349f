# openai_sdk.bash: sourced by the e2e scripts that drive `gptoss-engine serve` through the official
# OpenAI Node SDK (a real client, pinned) or other pinned npm tools.
#   sdk_begin BUILD     the scripts' common start: $build, $tmp (removed at exit with the servers
#                       in $pids), tap.bash, the engine built, the SDK installed (or Bail out!)
#   npm_pinned DIR PKG VERSION  installs PKG@VERSION into DIR once (then cached)
#   sdk_serve FLAGS...  starts serve on gpt-oss-tiny (dummy weights); sets $url and $server_pid
#   sdk_run FILE ARGS   runs one tests/e2e/sdk*/*.cjs against $url; its "ok"/"not ok" lines are
#                       numbered into this script's TAP stream
OPENAI_SDK_VERSION=6.49.0  # the last 6.x: 7.x needs Node.js 22, Debian 12 ships 20

npm_pinned() {  # dir, package, version
  grep -qF "\"version\": \"$3\"" "$1/node_modules/$2/package.json" 2>/dev/null && return 0
  command -v npm > /dev/null || { echo "# npm not found: install nodejs and npm"; return 1; }
  mkdir -p "$1"
  npm install --silent --no-audit --no-fund --prefix "$1" -E "$2@$3" > "$tmp/npm.log" 2>&1 ||
    { echo "# npm install $2@$3 failed: $(tail -3 "$tmp/npm.log")"; return 1; }
}

sdk_begin() {  # build dir
  build=$1
  sdk_dir=$build/npm
  tmp=$(mktemp -d)
  pids=()
  trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
  . tests/e2e/tap.bash
  [ -x "$build/bin/gptoss-engine" ] || { echo "Bail out! $build/bin/gptoss-engine is not built"; exit 1; }
  npm_pinned "$sdk_dir" openai "$OPENAI_SDK_VERSION" ||
    { echo "Bail out! the OpenAI SDK could not be installed"; exit 1; }
}

sdk_serve() {  # flags...
  local log=$tmp/serve.$RANDOM.log
  "$build/bin/gptoss-engine" serve gpt-oss-tiny --weight-format f32 --port 0 \
    --kv-cache-memory 256MiB "$@" > "$log" 2>&1 &
  server_pid=$!
  pids+=("$server_pid")
  url=$(wait_for_output "$log" 's/^gptoss-engine serve: listening on //p' 300) && return 0
  echo "# serve did not start: $(tail -3 "$log")"
  return 1
}

sdk_run() {  # file.cjs, args...: renumbers its TAP lines into ours
  local line
  while IFS= read -r line; do
    case $line in
      "not ok - "*) num_tests=$((num_tests + 1)); echo "not ok $num_tests - ${line#not ok - }" ;;
      "ok - "*) num_tests=$((num_tests + 1)); echo "ok $num_tests - ${line#ok - }" ;;
      *) echo "# $line" ;;
    esac
  done < <(NODE_PATH="$sdk_dir/node_modules" node "$@" "$url" 2>&1 ||
           echo "not ok - $(basename "$1") exited with status $?")
}
