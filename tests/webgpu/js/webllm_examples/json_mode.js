// WebLLM's examples/json-mode, from its documented calls. Changed: the import, the model id.
import * as webllm from "/mlcx-web/index.js";

function setLabel(id, text) {
  const label = document.getElementById(id);
  if (label == null) throw Error("Cannot find label " + id);
  label.innerText = text;
}

export async function main() {
  const initProgressCallback = (report) => setLabel("init-label", report.text);
  const selectedModel = "tiny-llm";
  const engine = await webllm.CreateMLCEngine(selectedModel, { initProgressCallback: initProgressCallback });
  const request = {
    stream: false,
    messages: [{ role: "user", content: "Write a short JSON file introducing yourself." }],
    n: 2,
    max_tokens: 128,
    response_format: { type: "json_object" },
  };
  const reply0 = await engine.chatCompletion(request);
  const message = await engine.getMessage();
  console.log(reply0);
  console.log("First reply's last choice:\n" + message);
  console.log(reply0.usage);
  return { reply0, message };
}
