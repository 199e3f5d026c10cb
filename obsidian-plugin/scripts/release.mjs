// The release zip Obsidian's community-plugin conventions expect: main.js, manifest.json and
// styles.css in a folder named after the plugin id (also the three loose files for a GitHub
// release, which BRAT and the community store download). Run after `npm run build`.
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { zipSync } from "fflate";

const manifest = JSON.parse(readFileSync("manifest.json", "utf-8"));
const versions = JSON.parse(readFileSync("versions.json", "utf-8"));
if (!versions[manifest.version]) {
  console.error(`versions.json has no entry for ${manifest.version}`);
  process.exit(1);
}
const files = { "main.js": "dist/main.js", "manifest.json": "manifest.json", "styles.css": "styles.css" };
rmSync("release", { recursive: true, force: true });
mkdirSync("release", { recursive: true });
const zip = {};
for (const [name, src] of Object.entries(files)) {
  copyFileSync(src, `release/${name}`);
  zip[`${manifest.id}/${name}`] = readFileSync(src);
}
const out = `release/${manifest.id}-${manifest.version}.zip`;
writeFileSync(out, zipSync(zip, { level: 9 }));
console.log(`wrote ${out} and release/{main.js,manifest.json,styles.css}`);
