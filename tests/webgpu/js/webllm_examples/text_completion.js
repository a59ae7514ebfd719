// WebLLM's examples/text-completion, from its documented calls: its own appConfig names the
// model's URL (here the tiny artifact on this origin, written without its trailing slash, as
// a repository URL is). Changed: the import, the model id and URL.
import * as webllm from "/mlcx-web/index.js";

function setLabel(id, text) {
  const label = document.getElementById(id);
  if (label == null) throw Error("Cannot find label " + id);
  label.innerText = text;
}

export async function main() {
  const initProgressCallback = (report) => setLabel("init-label", report.text);
  const selectedModel = "tiny-base-q0f32-MLC";
  const appConfig = {
    model_list: [{
      model: new URL("/artifacts/tiny-llm", location.href).href,
      model_id: selectedModel,
      model_lib: webllm.modelLibURLPrefix + webllm.modelVersion + "/tiny-q0f32-webgpu.wasm",
      overrides: { context_window_size: 2048 },
    }],
  };
  const engine = await webllm.CreateMLCEngine(selectedModel, {
    appConfig: appConfig, initProgressCallback: initProgressCallback, logLevel: "INFO",
  });
  const reply0 = await engine.completions.create({
    prompt: "List 3 US states: ",
    echo: true,
    n: 2,
    max_tokens: 64,
    logprobs: true,
    top_logprobs: 2,
  });
  console.log(reply0);
  console.log(reply0.usage);
  return { reply0 };
}
