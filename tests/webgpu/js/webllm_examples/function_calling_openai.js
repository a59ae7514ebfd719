// WebLLM's examples/function-calling/function-calling-openai (streamed), from its documented
// calls. Changed: the import, the model id. It reads the calls from the last chunk before the
// usage chunk; a random tiny model asked with tool_choice "auto" answers in text, so the same
// stream is asked once more naming the function (OpenAI's forced tool_choice, max_tokens 48),
// where that chunk must carry the whole call.
import * as webllm from "/mlcx-web/index.js";

function setLabel(id, text) {
  const label = document.getElementById(id);
  if (label == null) throw Error("Cannot find label " + id);
  label.innerText = text;
}

export const TOOLS = [{
  type: "function",
  function: {
    name: "get_current_weather",
    description: "Get the current weather in a given location",
    parameters: {
      type: "object",
      properties: {
        location: { type: "string", description: "The city and state, e.g. San Francisco, CA" },
        unit: { type: "string", enum: ["celsius", "fahrenheit"] },
      },
      required: ["location"],
    },
  },
}];

async function streamed(engine, request) {
  const asyncChunkGenerator = await engine.chat.completions.create(request);
  let message = "";
  let lastChunk;
  let usageChunk;
  for await (const chunk of asyncChunkGenerator) {
    message += chunk.choices[0]?.delta?.content || "";
    setLabel("generate-label", message);
    if (!chunk.usage) lastChunk = chunk;
    usageChunk = chunk;
  }
  console.log(lastChunk.choices[0].delta);
  console.log(usageChunk.usage);
  return { message, lastChunk, usage: usageChunk.usage };
}

export async function main() {
  const initProgressCallback = (report) => setLabel("init-label", report.text);
  const engine = await webllm.CreateMLCEngine("tiny-llm", { initProgressCallback: initProgressCallback });
  const request = {
    stream: true,
    stream_options: { include_usage: true },
    messages: [{ role: "user", content: "What is the current weather in celsius in Pittsburgh and Tokyo?" }],
    tool_choice: "auto",
    tools: TOOLS,
  };
  const auto = await streamed(engine, request);
  const forced = await streamed(engine, {
    ...request, max_tokens: 48, tool_choice: { type: "function", function: { name: "get_current_weather" } },
  });
  return { auto, forced };
}
