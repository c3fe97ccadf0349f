// make-extra-vectors.mjs: writes tests/fixtures/tokenizer/o200k_base-extra-vectors.jsonl, tricky
// o200k_base cases ({"text": ..., "ids": [...]} per line, ids from the reference: the npm
// `tiktoken`, encode_ordinary) so the fixture can be regenerated: Unicode whitespace in runs and
// before letters, \r\n mixes, contractions (uppercase, U+017F long s, Kelvin sign), digits of other
// scripts, combining marks, CJK/Korean/Thai, emoji sequences, mixed scripts, code, 5,000-character
// runs, and seeded random Unicode (no lone surrogates). Deterministic: the same tiktoken version
// gives the same file. With --compare it instead checks our ids against the fixture. Owns only its
// output file; it must not install anything (tiktoken comes from build/npm: tiktoken-npm.mjs).
//
//   node scripts/make-extra-vectors.mjs [OUT.jsonl]
//   node scripts/make-extra-vectors.mjs --compare FIXTURE.jsonl OURS.jsonl
//     OURS.jsonl: `gptoss-bench tokenize --encoding o200k_base --jsonl FIXTURE.jsonl` output;
//     prints every mismatch (text, expected ids, our ids) and exits 1 if there is one.
import { readFileSync, writeFileSync } from "node:fs";

import { loadTiktoken } from "./tiktoken-npm.mjs";

const DEFAULT_OUT = "tests/fixtures/tokenizer/o200k_base-extra-vectors.jsonl";

// One JSON line. C0/C1 controls and U+2028/U+2029 are written as \u escapes so that no line
// splitter (Python's splitlines, editors) breaks a line inside a string.
function jsonLine(obj) {
  return JSON.stringify(obj).replace(/[\u0080-\u009f\u2028\u2029]/g,
                                     (c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0"));
}

// ---------------------------------------------------------------------------------------------
// --compare

function readJsonl(path) {
  return readFileSync(path, "utf8").split("\n").filter((l) => l.length).map((l) => JSON.parse(l));
}

function compare(fixturePath, oursPath) {
  const want = readJsonl(fixturePath), got = readJsonl(oursPath);
  let bad = 0;
  for (let i = 0; i < want.length; i++) {
    const g = got[i] ? got[i].ids : undefined;
    if (JSON.stringify(want[i].ids) === JSON.stringify(g)) continue;
    bad++;
    console.log(`MISMATCH line ${i + 1}`);
    console.log(`  text     ${jsonLine(want[i].text)}`);
    console.log(`  expected ${JSON.stringify(want[i].ids)}`);
    console.log(`  ours     ${JSON.stringify(g)}`);
  }
  if (got.length !== want.length) {
    bad++;
    console.log(`MISMATCH: ${want.length} vectors in ${fixturePath}, ` +
                `${got.length} lines in ${oursPath}`);
  }
  console.log(`${want.length - bad} of ${want.length} vectors match`);
  process.exit(bad ? 1 : 0);
}

// ---------------------------------------------------------------------------------------------
// cases

// Seeded 32-bit generator (xorshift32): the random cases are the same on every run.
function makeRng(seed) {
  let s = seed >>> 0 || 1;
  return {
    next() {
      s ^= s << 13; s >>>= 0;
      s ^= s >>> 17;
      s ^= s << 5; s >>>= 0;
      return s;
    },
    below(n) { return this.next() % n; },
    pick(arr) { return arr[this.below(arr.length)]; },
  };
}

const cp = (...codes) => String.fromCodePoint(...codes);

// Unicode White_Space (what tiktoken's \s is), plus look-alikes that are not whitespace.
const WHITESPACE = [
  "\t", "\n", "\u000b", "\u000c", "\r", " ", "\u0085", "\u00a0", "\u1680", "\u2000", "\u2001",
  "\u2002", "\u2003", "\u2004", "\u2005", "\u2006", "\u2007", "\u2008", "\u2009", "\u200a",
  "\u2028", "\u2029", "\u202f", "\u205f", "\u3000",
];
const NOT_WHITESPACE = ["\u180e", "\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u001c",
                        "\u001f"];

function whitespaceCases() {
  const out = [];
  for (const w of [...WHITESPACE, ...NOT_WHITESPACE]) {
    out.push(w, w + w, w + w + w, w + "a", w + w + "a", " " + w + "a", w + " a", "a" + w,
             "a" + w + w, "a" + w + "b", "a" + w + w + "b", w + "\n", "\n" + w,
             w + "\r\n" + w + "x", w + "1", w + "!", w + "'s", "x" + w + w + w + "\n\ny",
             w + "\u4e16\u754c", w + "\u0301");
  }
  out.push(WHITESPACE.join(""), WHITESPACE.join("") + "word", "word" + WHITESPACE.join("") + "word",
           WHITESPACE.filter((w) => w !== "\n" && w !== "\r").join("") + "x");
  // long runs and \r\n mixes
  for (const n of [2, 3, 15, 16, 17, 100, 1000]) {
    out.push(" ".repeat(n), " ".repeat(n) + "x", "\t".repeat(n) + "x", "\n".repeat(n),
             "\r\n".repeat(n), " \t".repeat(n) + "y", "\u3000".repeat(n) + "z", "\u00a0".repeat(n),
             "x" + " ".repeat(n) + "\n" + " ".repeat(n) + "y");
  }
  out.push("\r", "\r\r", "\r\n", "\n\r", "\r\n\r\n", "\n\r\n", "a\rb", "a\r\nb", "a\n\rb", " \r\n ",
           "  \r\n  x", "x \r\n\r\n y", "\r\n\t\r\n", "\t\r\n", "line\r\n  indented\r\n\tTab",
           "a \n b", "a  \n  b", "a\t\n\tb", "\n \n \n", " \n", "  \n\n  ", "\u0085\r\n",
           "\r\u0085", "\u2028\r\n\u2029", "end.\r\n\r\n\r\nnext", "a\u000b\u000cb", "  !",
           "  !!\n", " \u00a0!");
  return out;
}

function contractionCases() {
  const out = [];
  const endings = ["s", "t", "re", "ve", "m", "ll", "d"];
  const cased = (s) => [s, s.toUpperCase(), s[0].toUpperCase() + s.slice(1),
                        s.length > 1 ? s[0] + s.slice(1).toUpperCase() : s];
  for (const e of endings) {
    for (const c of new Set(cased(e))) {
      out.push(`it'${c}`, `IT'${c}`, `'${c}`, ` '${c}`, `'${c} x`, `x'${c}y`, `1'${c}`,
               `\u4e16'${c}`);
    }
  }
  out.push("HE'S HERE", "THEY'LL", "WE'VE", "I'M", "YOU'RE", "SHE'D", "DON'T", "don’t", "it\u2019s",
           "it\u02bcs", "it''s", "it's's", "'''s", "it'sx", "it'st", "it'lls", "it'dd", "it'ss");
  // U+017F LATIN SMALL LETTER LONG S folds to s; U+212A KELVIN SIGN folds to k
  out.push("he'\u017f", "HE'\u017f", "'\u017f", " '\u017f", "it'\u017f\u017f", "\u017f'\u017f",
           "\u017fome'\u017f", "it'\u212a", "'\u212a", "\u212a'\u017f", "\u212aelvin's", "5\u212a",
           "x'\u017ft", "I'\u212aLL", "it'\u0130", "it'\u0131", "IT'\u00df", "it'\ufb06");
  return out;
}

function digitCases() {
  const scripts = [
    "0123456789", "\u0660\u0661\u0662\u0663\u0664\u0665\u0666\u0667\u0668\u0669",
    "\u06f0\u06f1\u06f2\u06f3\u06f4\u06f5\u06f6\u06f7\u06f8\u06f9",
    "\u0966\u0967\u0968\u0969\u096a\u096b\u096c\u096d\u096e\u096f",
    "\uff10\uff11\uff12\uff13\uff14\uff15\uff16\uff17\uff18\uff19",
    "\u0e50\u0e51\u0e52\u0e53\u0e54", cp(0x1d7ce, 0x1d7cf, 0x1d7d0, 0x1d7d1),
    "\u00b2\u00b3\u00b9\u00bc\u00bd", "\u2160\u2161\u2162\u216b", "\u2460\u2461\u2462\u2473",
    "\u4e00\u4e8c\u4e09", "\u3007\u3021\u3022",
  ];
  const out = [];
  const first = (s, n) => Array.from(s).slice(0, n).join("");  // n code points, not UTF-16 units
  for (const d of scripts) {
    out.push(d, first(d, 1), first(d, 2), first(d, 4), " " + d, "x" + d, d + "x", d + "." + d,
             "-" + d, d.repeat(3));
  }
  out.push("12\u0663\u06644", "\uff11\uff122", "1,234,567.89", "3.14159e-10", "0x1F2E3d", "1e9",
           "1\u00a0000", "10\u202f000", "\u0661\u066b\u0662", "$1,000", "+44 20 7946 0958",
           "2024-01-02T03:04:05Z", "v1.2.3-rc.4", "1st 2nd 3rd 4th", "\u0967\u0968\u0969abc");
  return out;
}

function markCases() {
  const marks = ["\u0301", "\u0300\u0301", "\u0308", "\u20dd", "\u0489", "\u093f", "\u0e31",
                 "\ufe0f", "\u200d", "\u1ab0", "\u0903"];
  const out = [];
  for (const m of marks) {
    out.push(m, m + m + m, " " + m, "a" + m, "A" + m, "A" + m + "B", "a" + m + "b", "1" + m,
             m + "a", "!" + m, "\n" + m, m + "'s", "x " + m + "y", "\u4e16" + m);
  }
  out.push("e\u0301\u0301\u0301\u0301", "Z\u0351\u036b\u0343\u036a\u0302\u036b\u033d\u034f\u0334a",
           "caf\u00e9 cafe\u0301", "\u1100\u1161\u11a8", "\u0915\u094d\u0937",
           "\u0627\u064e\u0644\u0652", "\u05e9\u05c1\u05b8");
  return out;
}

function scriptCases() {
  return [
    "\u4f60\u597d\uff0c\u4e16\u754c\uff01",
    "\u6211\u4eec\u6d4b\u8bd5\u4e86\u541e\u5410\u91cf\u3002",
    "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8\u3067\u3059\u3002",
    "\u30ab\u30bf\u30ab\u30ca\u3068\u3072\u3089\u304c\u306a\u3068\u6f22\u5b57",
    "\uff8a\uff9d\uff76\uff78\uff76\uff80\uff76\uff85",
    "\u300c\u5f15\u7528\u300d\u3010\u62ec\u5f27\u3011",
    "\ud55c\uad6d\uc5b4 \ud14d\uc2a4\ud2b8\uc785\ub2c8\ub2e4.",
    "\u1112\u1161\u11ab\u1100\u1173\u11af", "\u3131\u3134\u3137 \u314f\u3151",
    "\u0e20\u0e32\u0e29\u0e32\u0e44\u0e17\u0e22\u0e40\u0e1b\u0e47\u0e19" +
        "\u0e20\u0e32\u0e29\u0e32\u0e17\u0e35\u0e48\u0e2a\u0e27\u0e22\u0e07\u0e32\u0e21",
    "\u0e01\u0e33\u0e25\u0e31\u0e07 \u0e17\u0e14\u0e2a\u0e2d\u0e1a",
    "\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645",
    "\u05e9\u05dc\u05d5\u05dd \u05e2\u05d5\u05dc\u05dd",
    "\u041f\u0440\u0438\u0432\u0435\u0442, \u043c\u0438\u0440!",
    "\u0393\u03b5\u03b9\u03ac \u03c3\u03bf\u03c5 \u039a\u03cc\u03c3\u03bc\u03b5",
    "\u0928\u092e\u0938\u094d\u0924\u0947 \u0926\u0941\u0928\u093f\u092f\u093e",
    "\u10d2\u10d0\u10db\u10d0\u10e0\u10ef\u10dd\u10d1\u10d0", "\u12a0\u121b\u122d\u129b",
    "\u0dc3\u0dd2\u0d82\u0dc4\u0dbd", "\u1797\u17b6\u179f\u17b6\u1781\u17d2\u1798\u17c2\u179a",
    "\u13e3\u13b3\u13a9", "\u1820\u1828\u1837", "\ua000\ua001", cp(0x10330, 0x10331, 0x10332),
    cp(0x1d4d0, 0x1d4d1, 0x1d4d2), cp(0x20000, 0x20001, 0x2a6d6),
    "Hello\u4e16\u754cWorld\u3053\u3093\u306b\u3061\u306f", "GPU\u541e\u5410\u91cf16042tokens/s",
    "iPhone\u7528\u6237\u3068Android\u30e6\u30fc\u30b6\u30fc",
    "\u041c\u043e\u0441\u043a\u0432\u0430Moscow",
    "abc\u0430\u0431\u0432ABC\u0410\u0411\u0412", "\u03b1\u03b2\u03b3abc\u05d0\u05d1\u05d2",
    "McDonald'S\u00e9t\u00e9", "\u01c5\u01c8\u01cb\u1f88\u1fbc titlecase \u01c4\u01c6",
    "\u02b0\u02b1\u02b2 modifier \u02c6\u02c7", "\u3005\u3031\u309d\u30fc\u30fd",
    "\u00aa\u00ba\u01bb\u01c0", "\u2126\u212b\u2132\u2183", "\ufb01\ufb02\ufb03\ufb04",
    "\u0130stanbul \u0131\u0130",
    "stra\u00dfe STRASSE \u1e9e", "\u0149\u01f0\u0390\u03b0",
  ];
}

function emojiCases() {
  const e = [
    cp(0x1f642), cp(0x1f680), cp(0x1f469, 0x200d, 0x1f4bb),
    cp(0x1f468, 0x200d, 0x1f469, 0x200d, 0x1f467, 0x200d, 0x1f466),
    cp(0x1f44d, 0x1f3fb), cp(0x1f44d, 0x1f3ff), cp(0x1f469, 0x1f3fd, 0x200d, 0x1f52c),
    cp(0x1f3f3, 0xfe0f, 0x200d, 0x1f308), cp(0x1f1ef, 0x1f1f5),
    cp(0x1f1fa, 0x1f1f8, 0x1f1e9, 0x1f1ea),
    "1\ufe0f\u20e3", "#\ufe0f\u20e3", "\u2764\ufe0f", cp(0x2764, 0xfe0f, 0x200d, 0x1f525),
    cp(0x1f3f4, 0xe0067, 0xe0062, 0xe0073, 0xe0063, 0xe0074, 0xe007f), cp(0x1f3fb),
    cp(0x1f3fb, 0x1f3fc),
    "\u263a", "\u00a9\u00ae\u2122", cp(0x1f9d1, 0x200d, 0x1f91d, 0x200d, 0x1f9d1),
  ];
  const out = [];
  for (const x of e) {
    out.push(x, " " + x, x + x, "a" + x + "b", x + " text", "\u4e16" + x, x + "\n");
  }
  out.push(e.join(""), e.join(" "), cp(0x1f600).repeat(50), "emoji \ud83d\ude42\ud83d\ude80 end");
  return out;
}

function codeCases() {
  return [
    "int main(int argc, char **argv) {\n\treturn 0;\n}\n",
    "#include <stdio.h>\r\n#define MAX(a, b) ((a) > (b) ? (a) : (b))\r\n",
    "static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }",
    "def f(x, *args, **kw):\n    '''doc'''\n    return [y ** 2 for y in x if y % 2 == 0]\n",
    "    if __name__ == \"__main__\":\n        main()\n\n\n",
    "const re = /^(?:[a-z0-9!#$%&'*+/=?^_`{|}~-]+)@\\w+$/giu;",
    "fn main() -> Result<(), Box<dyn Error>> { let v: Vec<u8> = vec![0u8; 16]; Ok(()) }",
    "SELECT id, COUNT(*) AS n FROM t WHERE x >= 10 GROUP BY id ORDER BY n DESC;",
    "<div class=\"a b\" data-x='1'>&lt;tag&gt;&nbsp;</div>",
    "{\"key\": [1, 2.5, -3e10, true, null], \"nested\": {\"\u00e9\": \"\\u00e9\"}}",
    "for i in $(seq 1 10); do echo \"$i\" | sed 's/x/y/g' >> out.log 2>&1; done",
    "a+=1;b-=2;c*=3;d/=4;e%=5;f<<=6;g>>=7;h&&=i||j??k",
    "x=>x.map(({a,b})=>a?.b??c)...rest",
    "/* comment */ // line\n/** doc\n * @param x\n */",
    "\t\t\tdeeply\n\t\t\t\tindented\n\t\tcode;\n",
    "    \n    \n    x = 1\n",
    "path/to/file.c:123:45: error: expected ';' before '}' token",
    "https://example.com/a/b?c=d&e=%20f#frag",
    "C:\\Users\\name\\Documents\\file.txt",
    "__init__ __dunder__ snake_case camelCase PascalCase SCREAMING_CASE kebab-case",
    "getHTTPResponseCode XMLHttpRequest iOS7 IPv6Address utf8ToUTF16",
    "printf(\"%5.2f%%\\n\", x);",
    "\u00a0\u00a0\u00a0\u00a0return x;",
    "\u3000\u3000\u5f15\u6570 = \u300c\u5024\u300d;  // \u30b3\u30e1\u30f3\u30c8",
    "if (a !== b && c <= d || !e) { throw new Error(`bad ${a}`); }",
    "...---...!!!???,,,;;;:::",
    "=====\n-----\n*****\n#####\n",
    "!!\n!!\r\n!!/\n//\n",
  ];
}

function longCases(rng) {
  const letters = "abcdefghijklmnopqrstuvwxyz";
  const randomWord = (n) => Array.from({ length: n }, () => rng.pick(letters)).join("");
  return [
    "a".repeat(5000), "A".repeat(5000), "ab".repeat(2500), randomWord(5000), " " + randomWord(5000),
    randomWord(5000).toUpperCase(), "x".repeat(4999) + "'s", "\u00e9".repeat(5000),
    "\u4e00".repeat(5000), "\u4f60\u597d".repeat(2500), "\ud55c".repeat(5000),
    "\u0e01".repeat(5000), "\u0430".repeat(5000), "7".repeat(5000), "\u0661".repeat(5000),
    "!".repeat(5000), ".".repeat(5000), " ".repeat(5000), "\n".repeat(5000), "\t".repeat(5000),
    "\u3000".repeat(5000), "\u0301".repeat(5000), cp(0x1f642).repeat(2500), "a\u0301".repeat(2500),
  ];
}

// Random strings from a pool that weighs interesting characters up, then from all code points.
function randomCases(rng) {
  const ranges = [
    [0x20, 0x7e], [0x20, 0x7e], [0x20, 0x7e], [0x09, 0x0d], [0xa0, 0x24f], [0x300, 0x36f],
    [0x370, 0x52f], [0x590, 0x6ff], [0x900, 0x97f], [0xe00, 0xe7f], [0x1100, 0x11ff],
    [0x1e00, 0x1fff], [0x2000, 0x206f], [0x2100, 0x24ff], [0x3000, 0x30ff], [0x4e00, 0x9fff],
    [0xac00, 0xd7a3], [0xfe00, 0xfe0f], [0xff00, 0xffef], [0x1f300, 0x1faff], [0x1d400, 0x1d7ff],
  ];
  const specials = [...WHITESPACE, "'s", "'LL", "'\u017f", "\r\n", "\u200d", "\ufe0f", "  ",
                    "\n\n"];
  const piece = () => {
    if (rng.below(8) === 0) return rng.pick(specials);
    const [lo, hi] = rng.pick(ranges);
    return cp(lo + rng.below(hi - lo + 1));
  };
  const anyCodePoint = () => {
    for (;;) {
      const c = rng.below(rng.below(4) === 0 ? 0x110000 : 0x30000);
      if (c < 0xd800 || c > 0xdfff) return cp(c);  // no surrogates
    }
  };
  const out = [];
  for (let i = 0; i < 300; i++) {
    const n = 1 + rng.below(i < 250 ? 40 : 400);
    let s = "";
    for (let k = 0; k < n; k++) s += piece();
    out.push(s);
  }
  for (let i = 0; i < 100; i++) {
    const n = 1 + rng.below(30);
    let s = "";
    for (let k = 0; k < n; k++) s += anyCodePoint();
    out.push(s);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------

function generate(outPath) {
  const { tiktoken, version } = loadTiktoken("make-extra-vectors");
  const rng = makeRng(0x6f323030);  // "o200"
  const all = [whitespaceCases(), contractionCases(), digitCases(), markCases(), scriptCases(),
               emojiCases(), codeCases(), longCases(rng), randomCases(rng)].flat();
  const seen = new Set();
  const enc = tiktoken.get_encoding("o200k_base");
  const utf8 = new TextDecoder("utf-8", { ignoreBOM: true });  // a leading U+FEFF is text here
  const lines = [];
  for (const text of all) {
    if (seen.has(text)) continue;
    seen.add(text);
    if (/[\ud800-\udfff]/u.test(text))
      throw new Error(`lone surrogate in case ${lines.length}: ${JSON.stringify(text)}`);
    const ids = Array.from(enc.encode_ordinary(text));
    const back = utf8.decode(enc.decode(Uint32Array.from(ids)));
    if (back !== text) throw new Error(`tiktoken does not round-trip case ${lines.length}`);
    lines.push(jsonLine({ text, ids }));
  }
  enc.free();
  writeFileSync(outPath, lines.join("\n") + "\n");
  process.stderr.write(`make-extra-vectors: wrote ${lines.length} vectors to ${outPath} ` +
                       `(tiktoken ${version})\n`);
}

const args = process.argv.slice(2);
if (args[0] === "--compare") {
  if (args.length !== 3) {
    process.stderr.write("usage: node scripts/make-extra-vectors.mjs --compare FIXTURE OURS\n");
    process.exit(2);
  }
  compare(args[1], args[2]);
} else {
  generate(args[0] || DEFAULT_OUT);
}
