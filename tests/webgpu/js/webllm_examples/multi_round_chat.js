// WebLLM's examples/multi-round-chat, from its documented calls. Changed: the import, the model
// id, max_tokens 32 (the example has none: a random tiny model may never stop). Its own check
// stays: the second round must prefill fewer tokens than the first (KV cache reused).
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

  const messages = [
    { role: "system", content: "You are a helpful, respectful and honest assistant. Be as happy as you can when speaking please. " },
    { role: "user", content: "Provide me three US states." },
  ];
  const reply0 = await engine.chat.completions.create({ stream: false, messages: messages, max_tokens: 32 });
  const replyMessage0 = await engine.getMessage();
  console.log(reply0, replyMessage0, reply0.usage);

  messages.push({ role: "assistant", content: replyMessage0 });
  messages.push({ role: "user", content: "Two more please!" });
  const reply1 = await engine.chat.completions.create({ stream: false, messages: messages, max_tokens: 32 });
  const replyMessage1 = await engine.getMessage();
  console.log(reply1, replyMessage1, reply1.usage);

  const prefillTokens0 = reply0.usage?.prompt_tokens;
  const prefillTokens1 = reply1.usage?.prompt_tokens;
  console.log("Requset 0 prompt tokens: ", prefillTokens0);
  console.log("Requset 1 prompt tokens: ", prefillTokens1);
  if (prefillTokens0 === undefined || prefillTokens1 === undefined || prefillTokens1 > prefillTokens0) {
    throw Error("Multi-round chat is not triggered as expected.");
  }
  return { reply0, replyMessage0, reply1, replyMessage1 };
}
