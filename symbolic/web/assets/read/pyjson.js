// A config.json's bytes read as symbolic/config/hfconfig.py _load reads them (Python 3.11's json module, C scanner:
// Lib/json/decoder.py and Modules/_json.c): its bounds, its error messages and positions (code points), ints apart
// from floats (Python's isinstance checks tell 1 from 1.0), objects as Maps in the file's key order; and Python's
// repr, str, == and json.dumps of such values, for the reader's one-line messages (reader.js).
"use strict";

(function (root) {
  class PyFloat { constructor(v) { this.v = v; } }  // a Python float (an int is a JS number or a BigInt)
  class Refusal extends Error {}  // one line, the CLI's ConfigError's text

  const isInt = (x) => (typeof x === "number" && !(x instanceof PyFloat)) || typeof x === "bigint";
  const isReal = (x) => isInt(x) || x instanceof PyFloat;
  const num = (x) => x instanceof PyFloat ? x.v : Number(x);

  // hfconfig._integer: an int of at most max_digits digits (BigInt beyond 2^53)
  function integer(text, maxDigits) {
    const digits = text.replace(/^-/, "").length;
    if (digits > maxDigits) throw new Refusal(`an integer of ${digits} digits (at most ${maxDigits} are read)`);
    const n = Number(text);
    return Number.isSafeInteger(n) ? n : BigInt(text);
  }

  class Malformed extends Error { constructor(msg, pos) { super(msg); this.pos = pos; } }
  class Deep extends Error {}
  const WS = " \t\n\r";
  const RECURSION = 990;  // about where CPython's default recursion limit stops the C scanner

  function parse(s, maxDigits) {  // s: an array of code points (one string each)
    const n = s.length;
    let depth = 0;
    const skip = (i) => { while (i < n && WS.includes(s[i])) i++; return i; };
    const word = (i, w) => s.slice(i, i + w.length).join("") === w;
    function string(end) {  // end: just after the opening quote; returns [value, end after the closing quote]
      const begin = end - 1;
      let out = "";
      for (;;) {
        let j = end;
        while (j < n && s[j] !== '"' && s[j] !== "\\" && s[j].codePointAt(0) > 0x1f) j++;
        if (j >= n) throw new Malformed("Unterminated string starting at", begin);
        out += s.slice(end, j).join("");
        if (s[j] === '"') return [out, j + 1];
        if (s[j] !== "\\") throw new Malformed("Invalid control character at", j);
        j++;
        if (j >= n) throw new Malformed("Unterminated string starting at", begin);
        const c = s[j];
        if (c !== "u") {
          const esc = { '"': '"', "\\": "\\", "/": "/", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t" }[c];
          if (esc === undefined) throw new Malformed("Invalid \\escape", j - 1);
          out += esc;
          end = j + 1;
          continue;
        }
        const hex = (at) => {
          const h = s.slice(at, at + 4).join("");
          if (!/^[0-9a-fA-F]{4}$/.test(h)) throw new Malformed("Invalid \\uXXXX escape", at - 1);
          return parseInt(h, 16);
        };
        j++;
        if (j + 4 >= n) throw new Malformed("Invalid \\uXXXX escape", j - 1);
        let c1 = hex(j);
        j += 4;
        if (c1 >= 0xd800 && c1 <= 0xdbff && j + 6 < n && s[j] === "\\" && s[j + 1] === "u") {
          const c2 = hex(j + 2);
          if (c2 >= 0xdc00 && c2 <= 0xdfff) { c1 = 0x10000 + ((c1 - 0xd800) << 10) + (c2 - 0xdc00); j += 6; }
        }
        out += String.fromCodePoint(c1);
        end = j;
      }
    }
    function number(i) {
      const start = i;
      const digit = (k) => k < n && s[k] >= "0" && s[k] <= "9";
      if (s[i] === "-") { i++; if (i >= n) throw new Malformed("Expecting value", start); }
      if (s[i] >= "1" && s[i] <= "9") { i++; while (digit(i)) i++; } else if (s[i] === "0") i++;
      else throw new Malformed("Expecting value", start);
      let isFloat = false;
      if (i < n - 1 && s[i] === "." && digit(i + 1)) { isFloat = true; i += 2; while (digit(i)) i++; }
      if (i < n - 1 && (s[i] === "e" || s[i] === "E")) {
        const e = i;
        i++;
        if (i < n - 1 && (s[i] === "-" || s[i] === "+")) i++;
        while (digit(i)) i++;
        if (digit(i - 1)) isFloat = true; else i = e;
      }
      const text = s.slice(start, i).join("");
      return [isFloat ? new PyFloat(Number(text)) : integer(text, maxDigits), i];
    }
    function value(i) {
      if (i >= n) throw new Malformed("Expecting value", i);
      const c = s[i];
      if (c === '"') return string(i + 1);
      if (c === "{" || c === "[") {
        if (++depth > RECURSION) throw new Deep();
        const out = c === "{" ? object(i + 1) : array(i + 1);
        depth--;
        return out;
      }
      for (const [w, v] of [["null", null], ["true", true], ["false", false], ["NaN", new PyFloat(NaN)],
        ["Infinity", new PyFloat(Infinity)], ["-Infinity", new PyFloat(-Infinity)]]) {
        if (c === w[0] && word(i, w)) return [v, i + w.length];
      }
      return number(i);
    }
    function object(end) {
      const pairs = [];
      let c = s[end];
      if (c !== '"') {
        end = skip(end);
        c = s[end];
        if (c === "}") return [close(pairs), end + 1];
        if (c !== '"') throw new Malformed("Expecting property name enclosed in double quotes", end);
      }
      end++;
      for (;;) {
        let key;
        [key, end] = string(end);
        if (s[end] !== ":") { end = skip(end); if (s[end] !== ":") throw new Malformed("Expecting ':' delimiter", end); }
        end = skip(end + 1);
        let v;
        [v, end] = value(end);
        pairs.push([key, v]);
        end = skip(end);
        c = end < n ? s[end] : "";
        end++;
        if (c === "}") break;
        if (c !== ",") throw new Malformed("Expecting ',' delimiter", end - 1);
        end = skip(end);
        c = s[end];
        end++;
        if (c !== '"') throw new Malformed("Expecting property name enclosed in double quotes", end - 1);
      }
      return [close(pairs), end];
    }
    function close(pairs) {  // hfconfig._no_duplicates
      const seen = new Map();
      for (const [k, v] of pairs) {
        if (seen.has(k)) throw new Refusal(`key ${repr(k)} appears twice in one object (JSON readers differ on which one wins)`);
        seen.set(k, v);
      }
      return seen;
    }
    function array(end) {
      const out = [];
      end = skip(end);
      if (s[end] === "]") return [out, end + 1];
      for (;;) {
        let v;
        [v, end] = value(end);
        out.push(v);
        end = skip(end);
        const c = end < n ? s[end] : "";
        end++;
        if (c === "]") return [out, end];
        if (c !== ",") throw new Malformed("Expecting ',' delimiter", end - 1);
        end = skip(end);
      }
    }
    if (s[0] === "\ufeff") throw new Malformed("Unexpected UTF-8 BOM (decode using utf-8-sig)", 0);
    const [v, end] = value(skip(0));
    const last = skip(end);
    if (last !== n) throw new Malformed("Extra data", last);
    return v;
  }

  // the index of the first byte Python's strict UTF-8 decoder refuses, or -1
  function badUtf8(bytes) {
    for (let i = 0; i < bytes.length;) {
      const b = bytes[i];
      const need = b < 0x80 ? 0 : b >= 0xc2 && b <= 0xdf ? 1 : b >= 0xe0 && b <= 0xef ? 2 : b >= 0xf0 && b <= 0xf4 ? 3 : -1;
      if (need < 0) return i;
      const lo = b === 0xe0 ? 0xa0 : b === 0xf0 ? 0x90 : 0x80;
      const hi = b === 0xed ? 0x9f : b === 0xf4 ? 0x8f : 0xbf;
      for (let k = 1; k <= need; k++) {
        const c = bytes[i + k];
        if (c === undefined || c < (k === 1 ? lo : 0x80) || c > (k === 1 ? hi : 0xbf)) return i;
      }
      i += need + 1;
    }
    return -1;
  }

  function depthAtMost(v, limit) {  // hfconfig._depth
    const stack = [[v, 1]];
    while (stack.length) {
      const [item, level] = stack.pop();
      if (item instanceof Map || Array.isArray(item)) {
        if (level > limit) return false;
        for (const child of item instanceof Map ? item.values() : item) stack.push([child, level + 1]);
      }
    }
    return true;
  }

  // hfconfig._load, from the bytes read: the top-level object or a Refusal of one line naming `path`
  function load(bytes, path, bounds) {
    if (bytes.length > bounds.max_bytes) throw new Refusal(`${path}: larger than ${bounds.max_bytes / 2 ** 20 | 0} MiB: not a config.json`);
    const bad = badUtf8(bytes);
    if (bad >= 0) throw new Refusal(`${path}: cannot read: not UTF-8 text (byte ${bad})`);
    const text = Array.from(new TextDecoder("utf-8", { ignoreBOM: true }).decode(bytes));
    const deep = `${path}: nested deeper than ${bounds.max_depth} levels: not a config.json`;
    let raw;
    try {
      raw = parse(text, bounds.max_digits);
    } catch (err) {
      if (err instanceof Malformed) {
        const before = text.slice(0, err.pos);
        const line = before.filter((c) => c === "\n").length + 1;
        const col = err.pos - before.lastIndexOf("\n");
        throw new Refusal(`${path}: malformed JSON at line ${line} column ${col}: ${err.message}`);
      }
      if (err instanceof Refusal) throw new Refusal(`${path}: ${err.message}`);
      if (err instanceof Deep || err instanceof RangeError) throw new Refusal(deep);
      throw err;
    }
    if (!(raw instanceof Map)) throw new Refusal(`${path}: expected a JSON object at top level`);
    if (!depthAtMost(raw, bounds.max_depth)) throw new Refusal(deep);
    return raw;
  }

  function floatRepr(x) {  // Python's repr(float)
    if (Number.isNaN(x)) return "nan";
    if (!Number.isFinite(x)) return x > 0 ? "inf" : "-inf";
    if (x === 0) return Object.is(x, -0) ? "-0.0" : "0.0";
    const [mant, exp] = x.toExponential().split("e");
    const e = Number(exp);
    const digits = mant.replace("-", "").replace(".", "");
    const sign = x < 0 ? "-" : "";
    if (e < -4 || e >= 16) {
      const m = digits.length > 1 ? digits[0] + "." + digits.slice(1) : digits;
      return `${sign}${m}e${e < 0 ? "-" : "+"}${String(Math.abs(e)).padStart(2, "0")}`;
    }
    if (e < 0) return `${sign}0.${"0".repeat(-e - 1)}${digits}`;
    const whole = digits.slice(0, e + 1).padEnd(e + 1, "0");
    return `${sign}${whole}.${digits.slice(e + 1) || "0"}`;
  }

  function strRepr(text) {  // Python's repr(str)
    const quote = text.includes("'") && !text.includes('"') ? '"' : "'";
    let out = quote;
    for (const c of text) {
      const code = c.codePointAt(0);
      if (c === quote || c === "\\") out += "\\" + c;
      else if (c === "\n") out += "\\n";
      else if (c === "\r") out += "\\r";
      else if (c === "\t") out += "\\t";
      else if (code < 0x20 || code === 0x7f) out += "\\x" + code.toString(16).padStart(2, "0");
      else if (c !== " " && /[\p{C}\p{Z}]/u.test(c)) {
        out += code <= 0xff ? "\\x" + code.toString(16).padStart(2, "0") : code <= 0xffff ?
          "\\u" + code.toString(16).padStart(4, "0") : "\\U" + code.toString(16).padStart(8, "0");
      } else out += c;
    }
    return out + quote;
  }

  function repr(v) {  // Python's repr of a value json.loads gives
    if (v === null) return "None";
    if (v === true) return "True";
    if (v === false) return "False";
    if (v instanceof PyFloat) return floatRepr(v.v);
    if (isInt(v)) return String(v);
    if (typeof v === "string") return strRepr(v);
    if (Array.isArray(v)) return "[" + v.map(repr).join(", ") + "]";
    return "{" + [...v].map(([k, x]) => `${strRepr(k)}: ${repr(x)}`).join(", ") + "}";
  }

  const str = (v) => typeof v === "string" ? v : repr(v);  // Python's str

  function dumpString(text) {  // json.dumps of a str (ensure_ascii)
    let out = '"';
    for (let i = 0; i < text.length; i++) {
      const c = text[i], code = text.charCodeAt(i);
      const esc = { '"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f" }[c];
      out += esc || (code < 0x20 || code > 0x7e ? "\\u" + code.toString(16).padStart(4, "0") : c);
    }
    return out + '"';
  }

  function dumps(v) {  // Python's json.dumps
    if (v === null || v === undefined) return "null";
    if (v === true || v === false) return String(v);
    if (v instanceof PyFloat) return Number.isNaN(v.v) ? "NaN" : !Number.isFinite(v.v) ? (v.v > 0 ? "Infinity" : "-Infinity") : floatRepr(v.v);
    if (isInt(v)) return String(v);
    if (typeof v === "string") return dumpString(v);
    if (Array.isArray(v)) return "[" + v.map(dumps).join(", ") + "]";
    return "{" + [...v].map(([k, x]) => `${dumpString(k)}: ${dumps(x)}`).join(", ") + "}";
  }

  function eq(a, b) {  // Python's == of two such values (True == 1, 1 == 1.0)
    const n = (x) => typeof x === "boolean" ? Number(x) : isReal(x) ? num(x) : undefined;
    if (n(a) !== undefined && n(b) !== undefined) {
      return typeof a === "bigint" && typeof b === "bigint" ? a === b : n(a) === n(b);
    }
    if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => eq(x, b[i]));
    if (a instanceof Map && b instanceof Map) {
      return a.size === b.size && [...a].every(([k, x]) => b.has(k) && eq(x, b.get(k)));
    }
    return a === b;
  }

  const truthy = (v) => !(v === null || v === false || v === "" || (isReal(v) && num(v) === 0) ||
    (Array.isArray(v) && !v.length) || (v instanceof Map && !v.size));  // Python's bool()

  root.PYJSON = { PyFloat, Refusal, isInt, isReal, num, load, repr, str, dumps, eq, truthy };
})(typeof window !== "undefined" ? window : globalThis);
