// WebLLM's examples/integrity-verification, from its documented calls: a record's `integrity`
// (SRI hashes of the config, the model library and the tokenizer files) checked as the model
// loads, a mismatch an IntegrityError. The right hashes are those mlcx web lists in
// prebuiltAppConfig; the wrong one is a config hash of other bytes. Changed: the import, the
// model id and record, max_tokens 8 (the example has none).
import * as webllm from "/mlcx-web/index.js";

async function load(integrity) {
  const served = webllm.prebuiltAppConfig.model_list.find((r) => r.model_id === "tiny-llm");
  const appConfig = { model_list: [{ ...served, model_id: "tiny-checked", integrity }] };
  try {
    const engine = await webllm.CreateMLCEngine("tiny-checked", { appConfig });
    const reply = await engine.chat.completions.create({ messages: [{ role: "user", content: "Hello! What can you do?" }], max_tokens: 8 });
    return { loaded: true, finish: reply.choices[0].finish_reason };
  } catch (error) {
    if (error instanceof webllm.IntegrityError) {
      return { loaded: false, url: error.url, expected: error.expected, actual: error.actual };
    }
    return { loaded: false, error: `${error.name}: ${error.message}` };
  }
}

export async function main() {
  const served = webllm.prebuiltAppConfig.model_list.find((r) => r.model_id === "tiny-llm").integrity;
  const other = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode("other bytes")));
  const wrong = "sha256-" + btoa(String.fromCharCode(...other));
  return {
    right: await load(served),
    wrong: await load({ ...served, config: wrong }),
    warned: await load({ ...served, config: wrong, onFailure: "warn" }),
    wrongHash: wrong,
  };
}
