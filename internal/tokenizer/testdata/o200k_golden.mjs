// Writes o200k_golden.json: the o200k_base token ids of every string in
// qwen_golden_inputs.json (the same varied inputs as the Qwen golden file),
// computed by an independent implementation, the npm package js-tiktoken
// (a JavaScript port of OpenAI's tiktoken with the encoding's ranks).
//
// Usage (geno200k.sh does this):
//   npm install --prefix DIR js-tiktoken@1.0.21
//   node o200k_golden.mjs DIR
//
// Text is encoded as ordinary text: no string is turned into a special
// token, as package tokenizer encodes documents.

import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const pkgName = "js-tiktoken";
const pkgVersion = "1.0.21";

const prefix = process.argv[2];
if (!prefix) {
  console.error("usage: node o200k_golden.mjs DIR (where " + pkgName + " is installed)");
  process.exit(2);
}
const require = createRequire(join(prefix, "package.json"));
const version = JSON.parse(readFileSync(join(prefix, "node_modules", pkgName, "package.json"), "utf8")).version;
if (version !== pkgVersion) {
  console.error(`${pkgName} is ${version}, want ${pkgVersion}`);
  process.exit(1);
}
const { Tiktoken } = require(pkgName + "/lite");
const ranks = require(pkgName + "/ranks/o200k_base");
const enc = new Tiktoken(ranks);

const here = dirname(fileURLToPath(import.meta.url));
const inputs = JSON.parse(readFileSync(join(here, "qwen_golden_inputs.json"), "utf8"));
const cases = inputs.map((text) => ({ text, ids: enc.encode(text, [], []) }));
const out = { package: `${pkgName}@${version} o200k_base`, cases };
writeFileSync(join(here, "o200k_golden.json"), JSON.stringify(out, null, 0).replace(/\},\{/g, "},\n{") + "\n");
console.error(`wrote ${cases.length} cases`);
