# tap.bash: sourced by the e2e scripts: TAP output helpers (ok / not ok lines, a plan at the end).
num_tests=0
tap_ok() {  # description, command...: passes when the command succeeds
  local desc=$1; shift
  num_tests=$((num_tests + 1))
  if "$@"; then echo "ok $num_tests - $desc"; else echo "not ok $num_tests - $desc"; fi
}
tap_done() { echo "1..$num_tests"; }
