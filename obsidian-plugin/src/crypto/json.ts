/**
 * The record payload's JSON: Python's `json.dumps(sort_keys=True, separators=(",", ":"),
 * ensure_ascii=False)` byte for byte, and a strict parser that keeps integers exact.
 *
 * JSON.parse would round nanosecond times (about 1.7e18, beyond 2^53); this parser returns
 * integers outside the safe range as bigint and refuses nothing Python's json.loads accepts
 * for a record, except NaN/Infinity (which no record holds).
 */

export type Json = null | boolean | number | bigint | string | Json[] | { [k: string]: Json };

/** A JSON string exactly as Python writes it with ensure_ascii=False. */
export function pyString(s: string): string {
  // JSON.stringify escapes ", \, \b \f \n \r \t and other C0 controls as \u00xx (lowercase),
  // like Python; both leave U+2028/U+2029 and DEL unescaped.
  return JSON.stringify(s);
}

export function pyDumps(value: Json): string {
  if (value === null) return "null";
  if (value === true) return "true";
  if (value === false) return "false";
  if (typeof value === "bigint") return value.toString();
  if (typeof value === "number") {
    if (!Number.isSafeInteger(value)) throw new Error("only integers are written into records");
    return String(value);
  }
  if (typeof value === "string") return pyString(value);
  if (Array.isArray(value)) return "[" + value.map(pyDumps).join(",") + "]";
  const keys = Object.keys(value).sort(byCodePoint);
  return "{" + keys.map((k) => pyString(k) + ":" + pyDumps(value[k])).join(",") + "}";
}

function byCodePoint(a: string, b: string): number {
  const x = Array.from(a);
  const y = Array.from(b);
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = x[i].codePointAt(0)! - y[i].codePointAt(0)!;
    if (d) return d;
  }
  return x.length - y.length;
}

export class JsonError extends Error {}

/** Parse JSON text; integers beyond Number's safe range come back as bigint. */
export function parseJson(text: string): Json {
  let i = 0;
  const ws = () => {
    while (i < text.length && " \t\n\r".includes(text[i])) i++;
  };
  const fail = (what: string): never => {
    throw new JsonError(`${what} at offset ${i}`);
  };
  const value = (depth: number): Json => {
    if (depth > 64) fail("nested too deeply");
    ws();
    const c = text[i];
    if (c === "{") {
      i++;
      const obj: { [k: string]: Json } = Object.create(null);
      ws();
      if (text[i] === "}") {
        i++;
        return obj;
      }
      for (;;) {
        ws();
        if (text[i] !== '"') fail("expected a key");
        const k = str();
        ws();
        if (text[i] !== ":") fail("expected ':'");
        i++;
        obj[k] = value(depth + 1);
        ws();
        if (text[i] === ",") {
          i++;
          continue;
        }
        if (text[i] === "}") {
          i++;
          return obj;
        }
        fail("expected ',' or '}'");
      }
    }
    if (c === "[") {
      i++;
      const arr: Json[] = [];
      ws();
      if (text[i] === "]") {
        i++;
        return arr;
      }
      for (;;) {
        arr.push(value(depth + 1));
        ws();
        if (text[i] === ",") {
          i++;
          continue;
        }
        if (text[i] === "]") {
          i++;
          return arr;
        }
        fail("expected ',' or ']'");
      }
    }
    if (c === '"') return str();
    if (text.startsWith("true", i)) {
      i += 4;
      return true;
    }
    if (text.startsWith("false", i)) {
      i += 5;
      return false;
    }
    if (text.startsWith("null", i)) {
      i += 4;
      return null;
    }
    const m = /^-?(?:0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i, i + 400));
    if (!m) return fail("unexpected character");
    i += m[0].length;
    if (m[1] === undefined && m[2] === undefined) {
      const n = Number(m[0]);
      return Number.isSafeInteger(n) ? n : BigInt(m[0]);
    }
    return new Float(Number(m[0])) as unknown as Json;
  };
  const str = (): string => {
    i++; // opening quote
    let out = "";
    for (;;) {
      if (i >= text.length) fail("unterminated string");
      const c = text[i];
      if (c === '"') {
        i++;
        return out;
      }
      if (c === "\\") {
        const e = text[i + 1];
        const simple: Record<string, string> = { '"': '"', "\\": "\\", "/": "/", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t" };
        if (e in simple) {
          out += simple[e];
          i += 2;
          continue;
        }
        if (e === "u") {
          const hex = text.slice(i + 2, i + 6);
          if (!/^[0-9a-fA-F]{4}$/.test(hex)) fail("bad \\u escape");
          out += String.fromCharCode(parseInt(hex, 16));
          i += 6;
          continue;
        }
        fail("bad escape");
      }
      if (c.charCodeAt(0) < 0x20) fail("control character in string");
      out += c;
      i++;
    }
  };
  const v = value(0);
  ws();
  if (i !== text.length) fail("extra data");
  return v;
}

/** A JSON number with a fraction or exponent: never a valid int field (Python checks type). */
export class Float {
  constructor(readonly value: number) {}
}

export function isInt(v: unknown): v is number | bigint {
  return (typeof v === "number" && Number.isSafeInteger(v)) || typeof v === "bigint";
}
