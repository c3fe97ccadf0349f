#!/usr/bin/env bash
# gpu-stage.sh: stage 1 of the GPU check (issue 19): on this (CPU, networked) machine, builds what
# scripts/gpu-check.sh runs and packs it into a self-contained folder DIR that is carried to a bare
# GPU machine (no network, no Debian dev packages) and run there with `DIR/run.sh OUT`:
#   DIR/stage.tar.gz, gzipped (the binaries are mostly CUDA code, 3x smaller packed; libopenblas
#   alone is 36 MiB) and unpacked by run.sh into a temporary folder:
#     bin/         gptoss-engine, gptoss-bench, test_cuda_ops, bench_cuda_kernels,
#                  bench_cuda_decode (those built)
#     bin/baseline (with GPU_STAGE_BASELINE=REV) gptoss-engine and bench_cuda_kernels built at
#                  git revision REV, for a before/after of a kernel change in the same device call
#                  (gpu-check.sh's kernels step and serve mode "baseline" run them)
#     lib/         every shared library they load per ldd, except the system ones the device has
#                  (glibc, libm, libpthread, libdl, librt, ld-linux, libstdc++, libgcc_s) and the
#                  CUDA ones it provides (libcudart, libcublas*, libnccl*, libcuda)
#     tests/fixtures/gptoss-tiny, datasets/sharegpt-synth.json   what the steps read, and
#     datasets/tokenizer (o200k_base.tiktoken, found next to bin/ as in the repo)
#   DIR/gpu-check.sh (the steps), DIR/run.sh (the driver), DIR/STAGED (what was built, and how)
# Builds with CUDA=1 into BUILD_ROOT (default build/gpu-stage) when nvcc exists, else CUDA=0 into
# build/gpu-stage-cpu with a note in DIR/STAGED (such a folder checks only the packaging, never
# the GPU). Fails when DIR and the repository's working tree (tracked and untracked files not
# ignored: they travel too) together pass GPU_STAGE_MAX_MIB (62: the device carries at most 64
# MiB in all).
#
#   scripts/gpu-stage.sh DIR
#   env: BUILD_ROOT (build/gpu-stage[-cpu]), CUDA (1 when nvcc exists), GPU_STAGE_MAX_MIB (62),
#        GPU_STAGE_FROM=BUILD_DIR: build nothing, stage the binaries already in BUILD_DIR
#        (the self-test tests/e2e/gpu_stage.sh uses it), GPU_STAGE_BASELINE=REV (a git revision
#        to build into DIR/bin/baseline, from a worktree under BUILD_ROOT-baseline)
set -uo pipefail
dir=${1:?usage: scripts/gpu-stage.sh DIR (then carry DIR to the GPU machine and run DIR/run.sh OUT)}
cd "$(dirname "$0")/.." || exit 1
max_mib=${GPU_STAGE_MAX_MIB:-62}
die() { echo "gpu-stage: $*" >&2; exit 1; }

# Build (or take) the binaries ------------------------------------------------------------------
nvcc=$(command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
note=
if [ -n "${GPU_STAGE_FROM:-}" ]; then
  root=$GPU_STAGE_FROM
  [ -x "$root/bin/gptoss-engine" ] || die "GPU_STAGE_FROM=$root has no bin/gptoss-engine: build it first (make BUILD_ROOT=$root all)"
  note="binaries taken from $root (GPU_STAGE_FROM), not built"
else
  cuda=${CUDA:-$([ -n "$nvcc" ] && echo 1 || echo 0)}
  root=${BUILD_ROOT:-build/gpu-stage$([ "$cuda" = 0 ] && echo -cpu)}  # never mix CUDA=0/1 objects
  [ "$cuda" = 0 ] && note="CUDA=0 (no nvcc here, or CUDA=0 given): the binaries have no CUDA backend; this folder proves the packaging only"
  echo "gpu-stage: make CUDA=$cuda BUILD_ROOT=$root (a few minutes with nvcc)"
  mkdir -p "$(dirname "$root")" || die "cannot create the folder of $root"
  make -j"$(nproc)" BUILD_ROOT="$root" CUDA="$cuda" all "$root/tests/test_cuda_ops" \
       "$root/bench/bench_cuda_kernels" "$root/bench/bench_cuda_decode" > "$root.make.log" 2>&1 ||
    die "make failed (CUDA=$cuda BUILD_ROOT=$root): see $root.make.log: $(grep -m1 -iE 'error|fatal' "$root.make.log")"
fi

# The baseline: the same binaries at another revision, built in a worktree of it.
baseline_root=
if [ -n "${GPU_STAGE_BASELINE:-}" ]; then
  rev=$(git rev-parse --verify -q "$GPU_STAGE_BASELINE^{commit}") ||
    die "GPU_STAGE_BASELINE=$GPU_STAGE_BASELINE is no commit of this repository"
  src=${BUILD_ROOT:-build/gpu-stage}-baseline
  if [ "$(git -C "$src" rev-parse HEAD 2>/dev/null)" != "$rev" ]; then
    git worktree remove --force "$src" 2>/dev/null; rm -rf "$src"
    git worktree add --detach "$src" "$rev" > /dev/null 2>&1 || die "git worktree add $src $rev failed"
  fi
  echo "gpu-stage: baseline $(git rev-parse --short "$rev"): make in $src"
  make -C "$src" -j"$(nproc)" BUILD_ROOT=build/stage CUDA="${cuda:-1}" build/stage/bin/gptoss-engine \
       build/stage/bench/bench_cuda_kernels > "$src.make.log" 2>&1 ||
    die "the baseline's make failed: see $src.make.log"
  baseline_root=$src/build/stage
fi

# Only a new, empty or earlier staged folder is replaced (never, say, the repo itself).
if [ -e "$dir" ] && [ ! -f "$dir/STAGED" ] && [ -n "$(ls -A "$dir" 2>/dev/null)" ]; then
  die "$dir exists and is not a staged folder (no STAGED file): give a new or empty folder"
fi
rm -rf "${dir:?}"
mkdir -p "$dir/bin" "$dir/lib" "$dir/tests/fixtures" "$dir/datasets" || die "cannot create $dir"
bins=()
for b in bin/gptoss-engine bin/gptoss-bench tests/test_cuda_ops bench/bench_cuda_kernels \
         bench/bench_cuda_decode; do
  if [ -x "$root/$b" ]; then
    cp "$root/$b" "$dir/bin/" && bins+=("$dir/bin/${b##*/}")
  else
    note+="${note:+; }$root/$b not built: its step will fail"
  fi
done
if [ -n "$baseline_root" ]; then
  mkdir -p "$dir/bin/baseline" || die "cannot create $dir/bin/baseline"
  for b in bin/gptoss-engine bench/bench_cuda_kernels; do
    cp "$baseline_root/$b" "$dir/bin/baseline/" && bins+=("$dir/bin/baseline/${b##*/}")
  done
  note+="${note:+; }baseline: bin/baseline built at $(git rev-parse --short "$GPU_STAGE_BASELINE")"
fi
# Debug info stays here: the device needs the code, not the DWARF (keeps DIR small).
command -v strip >/dev/null && strip --strip-debug "${bins[@]}"

# The ldd closure, less what the device has ---------------------------------------------------
system_lib='^(libc|libm|libmvec|libpthread|libdl|librt|libutil|libresolv|libstdc\+\+|libgcc_s|ld-linux[^ ]*|linux-vdso|libcudart|libcublas[A-Za-z]*|libnccl[^ ]*|libcuda|libnvidia[^ ]*)\.so'
missing=
while read -r name arrow path _; do
  [ "$arrow" = "=>" ] || continue
  [[ "$name" =~ $system_lib ]] && continue
  if [ "$path" = not ]; then missing+=" $name"; continue; fi
  [ -e "$dir/lib/$name" ] || cp -L "$path" "$dir/lib/$name" || die "cannot copy $path"
done < <(ldd "${bins[@]}" 2>/dev/null | grep '=>')
[ -z "$missing" ] || die "ldd finds no$missing here: install them (scripts/deps.sh) and stage again"

cp -r tests/fixtures/gptoss-tiny "$dir/tests/fixtures/" || die "cannot copy tests/fixtures/gptoss-tiny"
cp -r datasets/sharegpt-synth.json datasets/tokenizer "$dir/datasets/" ||
  die "cannot copy datasets/sharegpt-synth.json and datasets/tokenizer (restore them from git)"
cp scripts/gpu-check.sh "$dir/gpu-check.sh"

nlibs=$(find "$dir/lib" -type f | wc -l)
cuda_linked=no
ldd "$dir/bin/gptoss-engine" 2>/dev/null | grep -q libcudart && cuda_linked=yes
{
  echo "staged: $(date -u +%FT%TZ) from $(git describe --always --dirty 2>/dev/null) ($(uname -m))"
  echo "cuda backend: $cuda_linked"
  [ -n "$note" ] && echo "note: $note"
  echo "libraries: $(cd "$dir/lib" && echo *)"
} > "$dir/STAGED"
tar -czf "$dir/stage.tar.gz" -C "$dir" bin lib tests datasets ||
  die "cannot pack $dir/{bin,lib,tests,datasets} into stage.tar.gz"
rm -rf "${dir:?}/bin" "${dir:?}/lib" "${dir:?}/tests" "${dir:?}/datasets"

# run.sh: the device-side driver -----------------------------------------------------------------
cat > "$dir/run.sh" <<'RUN'
#!/usr/bin/env bash
# run.sh (written by scripts/gpu-stage.sh): stage 2 of the GPU check, on the GPU machine. Finds
# cuBLAS/NCCL/cudart there (ldconfig -p, the pip nvidia-* folders), runs gpu-check.sh's steps on
# this folder's binaries (device, ops, golden, kernels, serve: each gated on the one before, within
# GPU_CHECK_BUDGET_S, default 420), prints one summary table, and packs every log into
# OUT/gpu-check.tar.gz (OUT/summary.txt is the table). Exits 0 when every step that ran passed.
#   DIR/run.sh OUT        env: GPU_RUN_DEVICE=cpu (no GPU: the golden step on the CPU, the
#                         CUDA-only steps "skipped: no GPU"), and gpu-check.sh's GPU_CHECK_*
set -uo pipefail
out=${1:?usage: run.sh OUT}
here=$(cd "$(dirname "$0")" && pwd)
die() { echo "run.sh: $*" >&2; exit 1; }
mkdir -p "$out" || die "cannot create $out"
out=$(cd "$out" && pwd) || die "cannot enter $out"
unpacked=$(mktemp -d "${TMPDIR:-/tmp}/gpu-stage.XXXXXX") || die "cannot make a folder in ${TMPDIR:-/tmp}: set TMPDIR to a writable one"
tar -xzf "$here/stage.tar.gz" -C "$unpacked" || die "cannot unpack $here/stage.tar.gz into $unpacked (is DIR complete?)"
trap 'rm -rf "$unpacked"' EXIT
libs=$unpacked/lib
# CUDA libraries the device provides: the ld.so cache first, then the pip nvidia-* wheels.
for d in $(ldconfig -p 2>/dev/null | awk '/lib(cublas|cudart|nccl)[^ ]*\.so/ { sub(/\/[^\/]*$/, "", $NF); print $NF }' | sort -u) \
         $(timeout 20 find /usr /opt "${HOME:-/root}" -maxdepth 9 -type d -path '*-packages/nvidia/*/lib' 2>/dev/null | sort -u) \
         /usr/local/cuda/lib64; do
  [ -d "$d" ] && [[ ":$libs:" != *":$d:"* ]] && libs+=:$d
done
export LD_LIBRARY_PATH=$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
rm -rf "$out/logs"
echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH" > "$out/env.txt"
cat "$here/STAGED" >> "$out/env.txt"
for b in "$unpacked"/bin/* "$unpacked"/bin/baseline/*; do
  [ -f "$b" ] || continue
  echo "== ldd ${b##*/}"; ldd "$b" 2>&1
done >> "$out/env.txt"
missing=$(grep 'not found' "$out/env.txt" | awk '{ print $1 }' | sort -u | tr '\n' ' ')
[ -z "$missing" ] || echo "run.sh: libraries not found here: $missing(the steps that need them will fail; env.txt in the tarball has ldd's output)" >&2
GPU_CHECK_BIN=$unpacked/bin GPU_CHECK_BUDGET_S=${GPU_CHECK_BUDGET_S:-420} \
  bash "$here/gpu-check.sh" "$out/logs"
rc=$?
mv "$out/env.txt" "$out/logs/"
cp "$out/logs/summary.txt" "$out/summary.txt" 2>/dev/null
tar -czf "$out/gpu-check.tar.gz" -C "$out" logs && rm -rf "$out/logs"
echo "run.sh: logs in $out/gpu-check.tar.gz"
exit "$rc"
RUN
chmod +x "$dir/run.sh" "$dir/gpu-check.sh"

mib=$(du -sm "$dir" | cut -f1)
# What travels besides: the tracked files and the untracked ones git does not ignore.
tree_bytes=$( { git ls-files -z; git ls-files -z -o --exclude-standard; } |
  xargs -0 -r stat -c %s 2>/dev/null | awk '{ s += $1 } END { print s + 0 }')
tree_mib=$(( (tree_bytes + 1048575) / 1048576 ))
echo "gpu-stage: $dir: $mib MiB + the working tree's $tree_mib MiB (limit $max_mib), cuda backend: $cuda_linked, $nlibs libraries in stage.tar.gz"
[ -n "$note" ] && echo "gpu-stage: note: $note"
[ $(( mib + tree_mib )) -le "$max_mib" ] ||
  die "$dir ($mib MiB) and the working tree ($tree_mib MiB) pass $max_mib MiB (the device carries at most 64 MiB in all): see du -sh $dir/* and git ls-files"
echo "gpu-stage: carry $dir to the GPU machine, then run: $dir/run.sh OUT"
