// Fails the build when the mobile bundle uses a Node API: Obsidian on iOS and Android has none
// (no require("fs"), no Node crypto, no Buffer, no process). Run by `npm run build`.
import { readFileSync } from "node:fs";

const file = process.argv[2] ?? "dist/main.js";
const code = readFileSync(file, "utf-8");
const NODE_MODULES = ["fs", "path", "os", "crypto", "child_process", "net", "http", "https", "zlib", "stream", "buffer", "util", "url", "worker_threads", "readline", "events", "tty"];
const found = [];
const req = /\brequire\(\s*["'`](node:)?([a-z_]+)(\/[^"'`]*)?["'`]\s*\)/g;
for (const m of code.matchAll(req)) {
  if (m[1] || NODE_MODULES.includes(m[2])) found.push(`require("${m[1] ?? ""}${m[2]}")`);
}
for (const m of code.matchAll(/\bfrom\s*["'](node:[a-z_]+|fs|path|os|crypto)["']/g)) found.push(`import from "${m[1]}"`);
const GLOBALS = [
  [/(?<![.\w$])Buffer\s*[.(]/, "Buffer"],
  [/(?<![.\w$])process\s*\.\s*(env|argv|platform|exit|cwd|nextTick|versions|stdout|stderr|on)\b/, "process"],
  [/(?<![.\w$])__dirname\b/, "__dirname"],
  [/(?<![.\w$])__filename\b/, "__filename"],
  [/(?<![.\w$])setImmediate\s*\(/, "setImmediate"],
];
for (const [re, name] of GLOBALS) if (re.test(code)) found.push(name);
if (found.length) {
  console.error(`${file} uses Node APIs that Obsidian mobile does not have: ${[...new Set(found)].join(", ")}`);
  process.exit(1);
}
console.log(`${file}: no Node APIs (${(code.length / 1024).toFixed(0)} KiB)`);
