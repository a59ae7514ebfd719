// WebLLM's examples/abort-reload, from its documented calls: `new MLCEngine({
// initProgressCallback })`, `engine.reload(id)` not awaited, then `engine.unload()` during the
// load. Changed: the import, the model id, and when unload() is called: at the first progress
// report instead of after 5 s (so that it lands inside the load however fast the machine is).
// Afterwards the same engine loads the model and answers (max_tokens 8).
import * as webllm from "/mlcx-web/index.js";

function setLabel(id, text) {
  const label = document.getElementById(id);
  if (label == null) throw Error("Cannot find label " + id);
  label.innerText = text;
}

export async function main() {
  const reports = [];
  let unloaded = null;
  let engine;
  const initProgressCallback = (report) => {
    console.log(report.text);
    setLabel("init-label", report.text);
    reports.push({ text: report.text, afterUnload: unloaded !== null });
    if (unloaded === null) {
      console.log("calling unload");
      unloaded = engine.unload().catch((err) => console.log(err));
    }
  };
  const selectedModel = "tiny-llm";
  engine = new webllm.MLCEngine({ initProgressCallback });
  const reloading = engine.reload(selectedModel);
  await reloading; // resolves once unload() has aborted it
  await unloaded;
  let afterAbort;
  try {
    await engine.getMessage();
    afterAbort = "loaded";
  } catch (err) {
    afterAbort = err.name;
  }
  engine.setInitProgressCallback(undefined);
  await engine.reload(selectedModel);
  const reply = await engine.chat.completions.create({ messages: [{ role: "user", content: "hi" }], max_tokens: 8 });
  return { reports, afterAbort, reply };
}
