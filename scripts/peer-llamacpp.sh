#!/usr/bin/env bash
# peer-llamacpp.sh: builds llama.cpp, the independent peer of the CPU engine, once per CPU, and
# prints the folder of its binaries. Never part of `make test` (about 10 minutes on 2 cores the
# first time; then cached). `make peers` runs it before the peer checks.
#
#   scripts/peer-llamacpp.sh [PEERS_DIR (build/peers)]
#
# Where llama.cpp comes from (no network but the package registries): the npm package
# node-llama-cpp, pinned exactly (newer releases may not install here), ships llama.cpp's source
# as a git bundle (llama/gitRelease.bundle). It is installed with --ignore-scripts (its install
# step would download prebuilt binaries), cloned, and llama-server, llama-batched-bench and
# llama-bench are built with CMake for the CPU only: no UI, no curl, no OpenSSL (they reach for
# the network). GGML_NATIVE (llama.cpp's default, -march=native) gives llama.cpp its best kernels
# on this CPU, so the cache is keyed by the CPU model and flags: a build is never run on a
# machine it was not made for. The source's gguf-py (llama.cpp's GGUF writer) is what
# scripts/export-gguf.py imports.
#
# Output (stdout, one line each): LLAMACPP_BIN=<folder>, GGUF_PY=<folder>, LLAMACPP_COMMIT=<id>.
set -euo pipefail
NODE_LLAMA_CPP_VERSION=3.21.1
peers=${1:-build/peers}
mkdir -p "$peers"
peers=$(cd "$peers" && pwd)

log() { echo "peer-llamacpp: $*" >&2; }

need() {  # Debian packages the build and the GGUF writer need
  local missing=()
  command -v cmake > /dev/null || missing+=(cmake)
  command -v g++ > /dev/null || missing+=(g++)
  command -v npm > /dev/null || missing+=(npm)
  /usr/bin/python3 -c 'import numpy, yaml, tqdm, requests' 2> /dev/null ||
    missing+=(python3-numpy python3-yaml python3-tqdm python3-requests)
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    log "missing Debian packages: ${missing[*]}; run: sudo apt-get install -y ${missing[*]}"
    exit 1
  fi
  log "installing ${missing[*]}"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}") >&2
}
need

npm_dir="$peers/npm"
bundle="$npm_dir/node_modules/node-llama-cpp/llama/gitRelease.bundle"
if [ ! -f "$bundle" ]; then
  log "npm install node-llama-cpp@$NODE_LLAMA_CPP_VERSION (source bundle only)"
  mkdir -p "$npm_dir"
  npm install --prefix "$npm_dir" -E "node-llama-cpp@$NODE_LLAMA_CPP_VERSION" --ignore-scripts \
    --no-audit --no-fund >&2
fi
src="$peers/llama.cpp-src"
if [ ! -d "$src/.git" ]; then
  log "cloning $bundle"
  rm -rf "$src.tmp"
  git clone -q "$bundle" "$src.tmp" 2> /dev/null
  mv "$src.tmp" "$src"
fi
commit=$(git -C "$src" rev-parse --short=12 HEAD)

cpu_key=$( (grep -m1 '^model name' /proc/cpuinfo; grep -m1 '^flags' /proc/cpuinfo) | sha256sum | cut -c1-12)
out="$peers/llama.cpp-$commit-cpu$cpu_key"
bins=(llama-server llama-batched-bench llama-bench)
built=1
for b in "${bins[@]}"; do [ -x "$out/bin/$b" ] || built=0; done
if [ "$built" -eq 0 ]; then
  log "building ${bins[*]} (llama.cpp $commit, GGML_NATIVE for this CPU) into $out: ~10 minutes on 2 cores"
  cmake -S "$src" -B "$out" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DBUILD_SHARED_LIBS=OFF \
    -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DGGML_CUDA=OFF > "$peers/cmake.log" 2>&1 ||
    { tail -20 "$peers/cmake.log" >&2; log "cmake failed (log: $peers/cmake.log)"; exit 1; }
  cmake --build "$out" --target "${bins[@]}" -j "$(nproc)" > "$peers/build.log" 2>&1 ||
    { tail -30 "$peers/build.log" >&2; log "build failed (log: $peers/build.log)"; exit 1; }
fi
echo "LLAMACPP_BIN=$out/bin"
echo "GGUF_PY=$src/gguf-py"
echo "LLAMACPP_COMMIT=$commit"
