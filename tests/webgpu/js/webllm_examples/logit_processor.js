// WebLLM's examples/logit-processor (USE_WEB_WORKER false: the registry goes to CreateMLCEngine),
// from its documented calls, MyLogitProcessor included. Changed: the import, the model id,
// AUTOREGRESS_LIMIT (32 -> 8).
import * as webllm from "/mlcx-web/index.js";

const AUTOREGRESS_LIMIT = 8;

class MyLogitProcessor {
  tokenSequence = [];
  resets = 0;

  processLogits(logits) {
    logits[0] = 100.0; // should be enough so that we always sample token 0 below
    return logits;
  }

  processSampledToken(token) {
    this.tokenSequence.push(token);
  }

  resetState() {
    this.tokenSequence = [];
    this.resets += 1;
  }
}

export async function main() {
  const myLogitProcessor = new MyLogitProcessor();
  const logitProcessorRegistry = new Map();
  logitProcessorRegistry.set("tiny-llm", myLogitProcessor);
  const engine = await webllm.CreateMLCEngine("tiny-llm", { logitProcessorRegistry: logitProcessorRegistry });
  const runs = [];
  for (let round = 0; round < 2; round++) {
    const prompt = [42];
    const tokens = [await engine.forwardTokensAndSample(prompt, /*isPrefill=*/ true)];
    for (let counter = prompt.length; counter < AUTOREGRESS_LIMIT; counter++) {
      tokens.push(await engine.forwardTokensAndSample([tokens.at(-1)], /*isPrefill=*/ false));
    }
    runs.push(tokens);
    if (round === 0) await engine.resetChat();
  }
  const stats = await engine.runtimeStatsText();
  console.log(stats);
  return { runs, stats, sequence: myLogitProcessor.tokenSequence, resets: myLogitProcessor.resets };
}
