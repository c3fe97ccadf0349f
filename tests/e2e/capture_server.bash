# capture_server.bash: sourced by e2e scripts (after tap.bash, with $tmp and pids set) to run
# tests/e2e/capture_server.js: start_capture_server LOG starts it and sets capture_port;
# captured LOG LINE EXPR prints the JS expression EXPR evaluated on r = that line's
# {headers, body} (b = r.body).
start_capture_server() {
  command -v node > /dev/null || { echo "Bail out! node is not installed (make deps)"; exit 1; }
  : > "$1"
  node tests/e2e/capture_server.js "$1" > "$tmp/capture_server.out" 2>&1 &
  pids+=($!)
  capture_port=$(wait_for_output "$tmp/capture_server.out" 's/^listening //p' 50) ||
    { echo "Bail out! the node capture server did not start"; exit 1; }
}
captured() {
  node -e 'const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8").split("\n")[process.argv[2] - 1]);
           const b = r.body; console.log(eval(process.argv[3]))' "$1" "$2" "$3"
}
