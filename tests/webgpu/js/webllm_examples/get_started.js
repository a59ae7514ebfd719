// WebLLM's examples/get-started, from its documented calls. Changed: the import, the model id
// (the test's tiny model from mlcx web's prebuiltAppConfig) and the
// logit_bias token ids (the example's are Llama-3.1's "California" and "Texas"; these are the
// tiny vocabulary's: two banned, two favoured). main() returns what the example logs.
import * as webllm from "/mlcx-web/index.js";

function setLabel(id, text) {
  const label = document.getElementById(id);
  if (label == null) throw Error("Cannot find label " + id);
  label.innerText = text;
}

export const BANNED = [46, 71];
export const FAVOURED = [84, 351];

export async function main() {
  const initProgressCallback = (report) => {
    setLabel("init-label", report.text);
  };
  const selectedModel = "tiny-llm";
  const engine = await webllm.CreateMLCEngine(
    selectedModel,
    { initProgressCallback: initProgressCallback, logLevel: "INFO" },
    { context_window_size: 2048 },
  );
  const reply0 = await engine.chat.completions.create({
    messages: [{ role: "user", content: "List three US states." }],
    n: 3,
    temperature: 1.5,
    max_tokens: 256,
    logit_bias: { [BANNED[0]]: -100, [BANNED[1]]: -100, [FAVOURED[0]]: 5, [FAVOURED[1]]: 5 },
    logprobs: true,
    top_logprobs: 2,
    return_token_ids: true, // for the test's check of the banned tokens
  });
  console.log(reply0);
  console.log(reply0.usage);
  return { reply0 };
}
