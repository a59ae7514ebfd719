// Text completion's `echo: true` (OpenAI, WebLLM): the prompt's text before the completion's,
// in each whole choice and in each choice's first streamed chunk.

const echoed = (prompt, choice) => ({ ...choice, text: prompt + choice.text });

export function withEcho(reply, promptText) {
  if (!reply[Symbol.asyncIterator]) return { ...reply, choices: reply.choices.map((c) => echoed(promptText, c)) };
  return (async function* chunks() {
    const started = new Set();
    for await (const chunk of reply) {
      yield { ...chunk, choices: chunk.choices.map((c) => (started.has(c.index) ? c : (started.add(c.index), echoed(promptText, c)))) };
    }
  })();
}
