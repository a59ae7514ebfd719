// A picked folder served to the loader (src/local_files.js): paths inside the folder, a
// missing file as 404, and a folder without an artifact refused by what it lacks.

import assert from "node:assert/strict";
import { test } from "node:test";

import { localArtifact } from "../src/local_files.js";

const picked = (path, text) => Object.assign(new File([text], path.split("/").at(-1)), { webkitRelativePath: path });

test("the picked folder's files answer the loader's fetches", async () => {
  const { base, fetchFn } = localArtifact([picked("smol/mlcx-config.json", "{}"), picked("smol/params/index.json", "[1]")]);
  assert.equal(await (await fetchFn(new URL("params/index.json", base))).text(), "[1]");
  assert.equal((await fetchFn(new URL("tokenizer.json", base))).status, 404);
});

test("a folder without mlcx-config.json is refused", () => {
  assert.throws(() => localArtifact([picked("x/readme.txt", "")]), /no mlcx-config.json/);
});
