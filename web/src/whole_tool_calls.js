// Streamed tool calls as WebLLM sends them: a choice's calls go out whole (id, name, arguments)
// in its last delta, where WebLLM apps read them (its function-calling example reads the last
// chunk's delta). One delta per complete call is valid OpenAI streaming too, so an OpenAI
// accumulator gets the same calls; repeating them whole after streamed pieces would double
// their arguments there, so the pieces are not sent.

// Events whose `deltas` carry calls (withReplies' events, replies.js) -> the same, every call
// entry held back until the choice's last event, which carries its message's tool_calls.
export async function* wholeToolCalls(events) {
  for await (const e of events) {
    if (!e.deltas) {
      yield e;
      continue;
    }
    const deltas = e.deltas.filter((d) => !d.tool_calls);
    const calls = e.finish ? (e.message?.tool_calls ?? []) : [];
    if (calls.length) deltas.push({ tool_calls: calls.map((call, index) => ({ index, ...structuredClone(call) })) });
    yield { ...e, deltas };
  }
}
