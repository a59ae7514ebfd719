// WebLLM's examples/seed-to-reproduce, from its documented calls. Changed: the import, the
// model id. Its own check stays: with seed 42 each choice of the two
// requests is the same.
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
    stream: false,
    messages: [{ role: "user", content: "Write a creative Haiku about Pittsburgh" }],
    n: 3,
    temperature: 1.2,
    max_tokens: 128,
    seed: 42,
  };
  const reply0 = await engine.chat.completions.create(request);
  console.log("First reply's last choice:\n" + (await engine.getMessage()));
  const reply1 = await engine.chat.completions.create(request);
  console.log("Second reply's last choice:\n" + (await engine.getMessage()));
  for (const choice0 of reply0.choices) {
    const id = choice0.index;
    const choice1 = reply1.choices[id];
    if (choice0.message.content !== choice1.message.content) {
      throw Error("Chocie " + id + " of the two generations are different despite seeding");
    }
  }
  console.log(reply1.usage);
  return { reply0, reply1 };
}
