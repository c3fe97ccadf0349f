#!/usr/bin/env bash
# Installs the Debian packages that the build, the tests and the demo need, and only the missing ones.
# Idempotent: checks each package with dpkg -s first; runs apt-get update once, then one install.
# Without root it prints the one apt command to run instead and fails.
#   scripts/deps.sh        what make, make test and make demo need
#   scripts/deps.sh fuzz   that, plus clang and its fuzzer runtime (make fuzz only)
#   scripts/deps.sh memcheck  that, plus valgrind (make memcheck only)
set -euo pipefail

packages=(
  pkg-config             # finds the libraries below
  libcurl4-openssl-dev   # load generator HTTP client (curl multi)
  libcjson-dev           # JSON on the wire
  libjansson-dev         # JSON files with line/column errors
  libmicrohttpd-dev      # engine HTTP server
  libpcre2-dev           # tokenizer pre-split regex (JIT)
  libinih-dev            # INI sweep files
  libopenblas-dev        # CPU matrix products
  libcmocka-dev          # unit tests
  g++                    # the CUDA backend's sources built for the host SIMT emulator (tests/simt)
  python3                #   and turned into C++ for it (tests/simt/transform.py); its race check's
                         #   ThreadSanitizer (libtsan2) comes with g++ (libgcc-12-dev)
  gnuplot-nox            # plots
  slurm-wlm              # tests/e2e/sweep_slurm.sh: a real one-node Slurm cluster (sweep --slurm)
  munge                  #   and its authentication daemon
)
if [ "${1:-}" = fuzz ]; then
  packages+=(
    clang                # compiler for the fuzz targets (tests/fuzz)
    libclang-rt-14-dev   # libFuzzer and clang's sanitizer runtimes
  )
fi
[ "${1:-}" = memcheck ] && packages+=(valgrind)  # make memcheck (scripts/memcheck.sh)

missing=()
for pkg in "${packages[@]}"; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0

cmd="apt-get update && apt-get install -y --no-install-recommends ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  echo "deps: missing packages: ${missing[*]}" >&2
  echo "deps: run as root:  sudo sh -c '$cmd'" >&2
  exit 1
fi
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
