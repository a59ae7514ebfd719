// WebLLM's examples/multi-models (sequentialGeneration, then parallelGeneration), from its
// documented calls: two models in one worker engine, each request naming its model. Changed:
// the import, the model ids (the tiny model served twice, under two ids).
// Its own worker, as WebLLM writes it: a new realm, so its WebGPU device compiles every kernel.
import * as webllm from "/mlcx-web/index.js";

function setLabel(id, text) {
  const label = document.getElementById(id);
  if (label == null) throw Error("Cannot find label " + id);
  label.innerText = text;
}

const initProgressCallback = (report) => setLabel("init-label", report.text);
const selectedModel1 = "tiny-llm";
const selectedModel2 = "tiny-llm-2";
const prompt1 = "Tell me about California in 3 short sentences.";
const prompt2 = "Tell me about New York City in 3 short sentences.";
const request1 = { stream: true, stream_options: { include_usage: true }, messages: [{ role: "user", content: prompt1 }],
                   model: selectedModel1, max_tokens: 128 };
const request2 = { stream: true, stream_options: { include_usage: true }, messages: [{ role: "user", content: prompt2 }],
                   model: selectedModel2, max_tokens: 128 };

async function respond(engine, request, label) {
  let message = "";
  let usage;
  for await (const chunk of await engine.chat.completions.create(request)) {
    message += chunk.choices[0]?.delta?.content || "";
    setLabel(label, message);
    if (chunk.usage) usage = chunk.usage;
  }
  return { message, usage };
}

export async function main() {
  setLabel("prompt-label-1", `(with model ${selectedModel1})\n` + prompt1);
  setLabel("prompt-label-2", `(with model ${selectedModel2})\n` + prompt2);
  const engine = await webllm.CreateWebWorkerMLCEngine(
    new Worker(new URL("./worker.js", import.meta.url), { type: "module" }),
    [selectedModel1, selectedModel2],
    { initProgressCallback: initProgressCallback },
  );
  const sequential = [await respond(engine, request1, "generate-label-1"), await respond(engine, request2, "generate-label-2")];
  const sequentialMessages = [await engine.getMessage(selectedModel1), await engine.getMessage(selectedModel2)];
  const parallel = await Promise.all([respond(engine, request1, "generate-label-1"), respond(engine, request2, "generate-label-2")]);
  const parallelMessages = [await engine.getMessage(selectedModel1), await engine.getMessage(selectedModel2)];
  let unnamed;
  try {
    await engine.chat.completions.create({ messages: [{ role: "user", content: prompt1 }], max_tokens: 4 });
  } catch (err) {
    unnamed = err.name; // "without specifying it, error will throw due to ambiguity"
  }
  return { sequential, sequentialMessages, parallel, parallelMessages, unnamed };
}
