#!/usr/bin/env bash
# bench-corpus.sh: builds the tokenizer benchmark's text corpus, OUT_FILE (about 4 MB of valid
# UTF-8, roughly one third each of English prose, C code and CJK text), from files a Debian machine
# has: English from /usr/share/common-licenses and /usr/share/doc/*/copyright, code from
# /usr/include/**/*.h, CJK from the Chinese, Japanese and Korean man pages (manpages-zh and
# manpages-ja are installed when missing). File lists are sorted in the C locale, so the corpus is
# the same on every run of one machine; machines with other package versions get other text.
# With PART (english, code or cjk) only that part is written (for per-part measurements).
# Owns only OUT_FILE (write it under build/, never commit it); it must not touch anything else.
set -eu
out=${1:?usage: bench-corpus.sh OUT_FILE [english|code|cjk]   (e.g. build/bench/corpus.txt)}
part=${2:-all}
part_bytes=${BENCH_CORPUS_PART_BYTES:-1400000}  # bytes per part (English, code, CJK)
export LC_ALL=C

# Whole lines from stdin up to $1 bytes in all. Reads its input to the end (no SIGPIPE upstream).
take_bytes() {
  awk -v max="$1" '!done { n += length($0) + 1; if (n > max) done = 1; else print }'
}

# Drops invalid UTF-8 and NUL bytes, so tiktoken (which reads a JS string) sees the same bytes.
clean_utf8() {
  tr -d '\000' | iconv -f UTF-8 -t UTF-8 -c
}

english() {
  { find /usr/share/common-licenses -type f | sort; ls /usr/share/doc/*/copyright | sort; } |
    xargs -d '\n' cat -- | clean_utf8 | take_bytes "$part_bytes"
}

code() {
  find /usr/include -type f -name '*.h' | sort | xargs -d '\n' cat -- | clean_utf8 |
    take_bytes "$part_bytes"
}

# Lines of one language's man pages that hold non-ASCII text (the translated prose; most troff
# markup lines are ASCII and are left out), up to $2 bytes.
man_lines() {
  find "/usr/share/man/$1" -type f -name '*.gz' | sort | xargs -d '\n' zcat -f -- | clean_utf8 |
    grep -a '[^ -~	]' | take_bytes "$2"
}

cjk() {
  if [ ! -d /usr/share/man/zh_CN/man1 ] || [ ! -d /usr/share/man/ja/man1 ]; then
    echo "bench-corpus: installing manpages-zh and manpages-ja for the CJK part" >&2
    apt-get install -y -q manpages-zh manpages-ja >&2 ||
      { apt-get update -q >&2 && apt-get install -y -q manpages-zh manpages-ja >&2; } ||
      { echo "bench-corpus: cannot install manpages-zh, manpages-ja; run as root" >&2; exit 1; }
  fi
  local quarter=$((part_bytes / 4))
  man_lines zh_CN "$quarter"
  man_lines zh_TW "$quarter"
  man_lines ja "$quarter"
  man_lines ko "$quarter"
}

mkdir -p "$(dirname "$out")"
tmp="$out.tmp.$$"
trap 'rm -f "$tmp"' EXIT
case "$part" in
  all) { english; code; cjk; } >"$tmp"; min_size=$((part_bytes * 2)) ;;
  english | code | cjk) "$part" >"$tmp"; min_size=$((part_bytes / 2)) ;;
  *) echo "bench-corpus: unknown part '$part'; use english, code or cjk (none: all)" >&2; exit 1 ;;
esac
size=$(wc -c <"$tmp")
if [ "$size" -lt "$min_size" ]; then
  echo "bench-corpus: only $size bytes of text found (expected about $((part_bytes * 3))); are" \
    "/usr/share/doc, /usr/include and the CJK man pages present?" >&2
  exit 1
fi
mv "$tmp" "$out"
trap - EXIT
echo "bench-corpus: wrote $out ($size bytes)" >&2
