// Node 20 stand-in for `fs.globSync` (Node >= 22) in @modelcontextprotocol/conformance 0.2.0-alpha.12,
// applied by `cargo xtask test` after `npm ci` (idempotent; nothing to do on Node >= 22).
//
// dist/index.js imports `globSync as a` from "fs" on its second line, so on Node 20 the module
// cannot even load. Its one use is the results-folder summariser (`a("**/checks.json", {cwd})`) of
// the `sdk` and `tier-check` commands; `server`, which is what we run, never calls it. The import
// is dropped and a function `a` with the same contract (paths of checks.json files, relative to
// cwd) is appended; `l` (readdirSync) and `m` (path.join) are imported on the same line.
import { readFileSync, writeFileSync } from "node:fs";
import fs from "node:fs";

const file = new URL("./node_modules/@modelcontextprotocol/conformance/dist/index.js", import.meta.url);
const source = readFileSync(file, "utf8");
if (typeof fs.globSync === "function" || !source.includes("globSync as a,")) process.exit(0);
const standIn = "\nfunction a(_pattern,{cwd}){const out=[];const walk=(rel)=>{for(const d of " +
  "l(rel?m(cwd,rel):cwd,{withFileTypes:!0})){const r=rel?m(rel,d.name):d.name;d.isDirectory()?" +
  "walk(r):d.name===`checks.json`&&out.push(r)}};walk(``);return out}\n";
writeFileSync(file, source.replace("globSync as a,", "") + standIn);
