// WebLLM's examples/get-started-web-worker (mainStreaming, the one it runs), from its
// documented calls, its worker.ts as worker.js. Changed: the import, the model id. Also
// returned: the worker engine's public methods, to hold them to the page engine's.
import * as webllm from "/mlcx-web/index.js";

function setLabel(id, text) {
  const label = document.getElementById(id);
  if (label == null) throw Error("Cannot find label " + id);
  label.innerText = text;
}

export function publicMethods(engine) {
  const names = new Set();
  for (let p = Object.getPrototypeOf(engine); p && p !== EventTarget.prototype; p = Object.getPrototypeOf(p)) {
    for (const [name, d] of Object.entries(Object.getOwnPropertyDescriptors(p))) {
      if (name !== "constructor" && typeof d.value === "function") names.add(name);
    }
  }
  return [...names].sort();
}

export async function main() {
  const initProgressCallback = (report) => setLabel("init-label", report.text);
  const selectedModel = "tiny-llm";
  const engine = await webllm.CreateWebWorkerMLCEngine(
    new Worker(new URL("./worker.js", import.meta.url), { type: "module" }),
    selectedModel,
    { initProgressCallback: initProgressCallback },
  );
  const request = {
    stream: true,
    stream_options: { include_usage: true },
    messages: [
      { role: "system", content: "You are a helpful, respectful and honest assistant. Be as happy as you can when speaking please. " },
      { role: "user", content: "Provide me three US states." },
      { role: "assistant", content: "California, New York, Pennsylvania." },
      { role: "user", content: "Two more please!" },
    ],
    temperature: 1.5,
    max_tokens: 256,
  };
  const asyncChunkGenerator = await engine.chat.completions.create(request);
  let message = "";
  let usage;
  for await (const chunk of asyncChunkGenerator) {
    message += chunk.choices[0]?.delta?.content || "";
    setLabel("generate-label", message);
    if (chunk.usage) usage = chunk.usage;
  }
  const finalMessage = await engine.getMessage();
  console.log("Final message:\n", finalMessage);
  return { message, finalMessage, usage, methods: publicMethods(engine), pageMethods: publicMethods(new webllm.MLCEngine()) };
}
