# tap.bash: sourced by the e2e scripts: TAP output helpers (ok / not ok lines, a plan at the end),
# waiting for a server's "listening" line, and reading a JSON file's value (jget).
num_tests=0
tap_ok() {  # description, command...: passes when the command succeeds
  local desc=$1; shift
  num_tests=$((num_tests + 1))
  if "$@"; then echo "ok $num_tests - $desc"; else echo "not ok $num_tests - $desc"; fi
}
tap_done() { echo "1..$num_tests"; }

# Prints what sed expression $2 extracts from file $1 once it extracts anything, polling every
# 0.1 s up to $3 times; fails when it never does (e.g. a server's URL from its start-up log).
wait_for_output() {
  local found
  for _ in $(seq "$3"); do
    found=$(sed -n "$2" "$1")
    [ -n "$found" ] && { echo "$found"; return 0; }
    sleep 0.1
  done
  return 1
}

# Prints the JS expression $2 evaluated on o, the JSON of file $1 (node is a dependency).
jget() {  # file, JS expression on o: prints its value
  node -e 'const o = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
           console.log(eval(process.argv[2]))' "$1" "$2"
}
