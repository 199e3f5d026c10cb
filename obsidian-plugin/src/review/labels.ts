/**
 * The words a review note is written in: companion/review/labels.json itself, bundled from
 * the Python package (one table for both engines, never a copy). A language without a table
 * is written in English; plural forms are `[one, other]` (companion/review/labels.py).
 */
import TABLE from "../../../companion/review/labels.json";

type Table = Record<string, Record<string, string | string[]>>;

export function table(): Table {
  return TABLE as Table;
}

export function language(lang: string | null | undefined): string {
  return lang && Object.prototype.hasOwnProperty.call(table(), lang) ? lang : "en";
}

/** Python's `str.format` with named fields only (the table uses nothing else). */
function format(text: string, values: Record<string, string | number>): string {
  return text.replace(/\{(\w+)\}/g, (m, k: string) => (k in values ? String(values[k]) : m));
}

export function say(lang: string, key: string, values?: Record<string, string | number>): string {
  const text = table()[language(lang)][key];
  if (typeof text !== "string") throw new Error(`no label ${key}`);
  return values && Object.keys(values).length ? format(text, values) : text;
}

export function count(lang: string, key: string, n: number): string {
  const forms = table()[language(lang)][key] as string[];
  return format(n === 1 ? forms[0] : forms[1], { n });
}

/** Counts joined with commas (no conjunction: one rule for every language). */
export function join(_lang: string, parts: string[]): string {
  return parts.join(", ");
}

export function has(lang: string, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(table()[language(lang)], key);
}
