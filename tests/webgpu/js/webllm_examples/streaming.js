// WebLLM's examples/streaming, from its documented calls. Changed: the import, the model id,
// max_tokens 24 (the example has none).
import * as webllm from "/mlcx-web/index.js";

function setLabel(id, text) {
  const label = document.getElementById(id);
  if (label == null) throw Error("Cannot find label " + id);
  label.innerText = text;
}

export async function main() {
  const initProgressCallback = (report) => setLabel("init-label", report.text);
  const engine = await webllm.CreateMLCEngine("tiny-llm", { initProgressCallback: initProgressCallback });
  const request = {
    stream: true,
    stream_options: { include_usage: true },
    messages: [
      { role: "system", content: "You are a pirate chatbot who always responds in pirate speak!" },
      { role: "user", content: "Who are you?" },
    ],
    logprobs: true,
    top_logprobs: 2,
    max_tokens: 24,
  };
  const asyncChunkGenerator = await engine.chat.completions.create(request);
  let message = "";
  const chunks = [];
  for await (const chunk of asyncChunkGenerator) {
    chunks.push(chunk);
    message += chunk.choices[0]?.delta?.content || "";
    setLabel("generate-label", message);
    if (chunk.usage) console.log(chunk.usage);
  }
  const finalMessage = await engine.getMessage();
  console.log("Final message:\n", finalMessage);
  return { message, finalMessage, chunks };
}
