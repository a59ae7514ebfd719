// Run by tests/webgpu/test_web_package.py in a scratch project that installed the packed
// mlcx-web: the engine imports by the package's name; its types are where package.json says.
import assert from "node:assert/strict";
import { readFileSync, existsSync } from "node:fs";
import { createRequire } from "node:module";
import * as lib from "mlcx-web";

for (const name of ["CreateMLCEngine", "MLCEngine", "ContextWindowSizeExceededError"]) {
  assert.equal(typeof lib[name], "function", name);
}
const engine = new lib.MLCEngine();
await assert.rejects(engine.chat.completions.create({ messages: [] }), { name: "EngineNotLoadedError" });
const meta = JSON.parse(readFileSync("node_modules/mlcx-web/package.json"));
assert.ok(existsSync(`node_modules/mlcx-web/${meta.types}`));
assert.throws(() => createRequire(import.meta.url).resolve("mlcx-web/src/engine.js"));
console.log("imported", meta.name, meta.version);
