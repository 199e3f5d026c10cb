// Two bundles: dist/main.js (the Obsidian plugin: CommonJS, browser platform, `obsidian` and
// the editor packages external, no Node APIs: scripts/check-bundle.mjs enforces it) and
// dist/cli.js (the headless Node entry of the same sync core).
import esbuild from "esbuild";

const common = { bundle: true, sourcemap: false, target: "es2022", logLevel: "warning", legalComments: "none" };

await esbuild.build({
  ...common,
  entryPoints: ["src/obsidian/main.ts"],
  outfile: "dist/main.js",
  format: "cjs",
  platform: "browser",
  external: ["obsidian", "electron", "@codemirror/*", "@lezer/*"],
  minify: true,
  // `ignore` asks `process.platform` (guarded by typeof process); there is no process on mobile
  define: { "process.platform": '"mobile"' },
});

await esbuild.build({
  ...common,
  entryPoints: ["src/cli/main.ts"],
  outfile: "dist/cli.js",
  format: "esm",
  platform: "node",
  // libuv's pool (4 threads by default) runs both the file writes and WebCrypto's jobs: a first
  // sync of thousands of notes waits on it, so give it more threads before the first use
  banner: {
    js: "// Vault Companion headless sync (the Obsidian plugin's core under Node)\nprocess.env.UV_THREADPOOL_SIZE ??= \"16\";",
  },
});
