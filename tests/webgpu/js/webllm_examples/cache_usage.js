// WebLLM's examples/cache-usage, from its documented calls, with the Cache API backend ("cache"
// of its three: mlcx-web keeps artifacts in the Cache API). Changed: the import, the model id,
// max_tokens 16 (the example has none). Its own checks stay: cached after the first load, not
// after deleteModelAllInfoInCache.
import * as webllm from "/mlcx-web/index.js";

function setLabel(id, text) {
  const label = document.getElementById(id);
  if (label == null) throw Error("Cannot find label " + id);
  label.innerText = text;
}

export async function main() {
  const initProgressCallback = (report) => setLabel("init-label", report.text);
  const appConfig = webllm.prebuiltAppConfig;
  appConfig.cacheBackend = "cache";
  const selectedModel = "tiny-llm";
  const engine = await webllm.CreateMLCEngine(selectedModel, { initProgressCallback: initProgressCallback, appConfig: appConfig });
  const request = {
    stream: false,
    messages: [{ role: "user", content: "Write an analogy between mathematics and a lighthouse." }],
    n: 1,
    temperature: 0,
    max_tokens: 16,
  };
  const replies = [await engine.chat.completions.create(request)];
  const cached = [await webllm.hasModelInCache(selectedModel, appConfig)];
  if (!cached[0]) throw Error("Expect hasModelInCache() to be true, but got: " + cached[0]);

  await engine.reload(selectedModel);
  replies.push(await engine.chat.completions.create(request));

  await webllm.deleteModelAllInfoInCache(selectedModel, appConfig);
  cached.push(await webllm.hasModelInCache(selectedModel, appConfig));
  if (cached[1]) throw Error("Expect hasModelInCache() to be false, but got: " + cached[1]);

  await engine.reload(selectedModel);
  replies.push(await engine.chat.completions.create(request));
  cached.push(await webllm.hasModelInCache(selectedModel, appConfig));
  return { replies, cached };
}
