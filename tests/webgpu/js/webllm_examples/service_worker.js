// WebLLM's examples/service-worker (mainStreaming, the one it runs), from its documented calls.
// Its sw.ts (`new ServiceWorkerMLCEngineHandler()`) is the package's ready service worker,
// /mlcx-web/service_worker.js, which also claims the page at once (so the first visit needs no
// reload). Changed: the import, the model id.
import * as webllm from "/mlcx-web/index.js";

function setLabel(id, text) {
  const label = document.getElementById(id);
  if (label == null) throw Error("Cannot find label " + id);
  label.innerText = text;
}

const registerServiceWorker = async () => {
  if ("serviceWorker" in navigator) {
    const registration = await navigator.serviceWorker.register("/mlcx-web/service_worker.js", { type: "module", scope: "/" });
    if (registration.installing) console.log("Service worker installing");
    else if (registration.waiting) console.log("Service worker installed");
    else if (registration.active) console.log("Service worker active");
  }
};

export async function main() {
  await registerServiceWorker();
  await navigator.serviceWorker.ready;
  if (!navigator.serviceWorker.controller) {
    await new Promise((resolve) => navigator.serviceWorker.addEventListener("controllerchange", resolve, { once: true }));
  }
  const initProgressCallback = (report) => setLabel("init-label", report.text);
  const engine = await webllm.CreateServiceWorkerMLCEngine("tiny-llm", { initProgressCallback: initProgressCallback });
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
  return { message, finalMessage, usage };
}
