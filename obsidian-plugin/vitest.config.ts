import { defineConfig } from "vitest/config";
import { fileURLToPath } from "node:url";

export default defineConfig({
  resolve: {
    // Obsidian itself cannot run here: DOM tests load test/fake-obsidian.ts, a stand-in for the
    // parts of the `obsidian` module the settings tab and status bar use (a named boundary).
    alias: { obsidian: fileURLToPath(new URL("./test/fake-obsidian.ts", import.meta.url)) },
  },
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
