// Evaluated in a page on `mlcx web`'s origin by tests/webgpu/test_web_structured.py: constrained
// requests against one in-page engine, whole and streamed (the worker engines answer
// constrained requests in engine_scenarios.js and service_worker_scenario.js).
async ({ PROMPT, MAX_TOKENS, SCHEMA, GRAMMAR, TOOLS }) => {
  const { CreateMLCEngine } = await import("/mlcx-web/index.js");
  const engine = await CreateMLCEngine("/artifact/");
  const ask = (extra) => ({ messages: [{ role: "user", content: PROMPT }], temperature: 0,
                            max_tokens: MAX_TOKENS, return_token_ids: true, ...extra });
  const drain = async (stream) => {
    const chunks = [];
    for await (const c of stream) chunks.push(c);
    return chunks;
  };
  const named = { type: "function", function: { name: TOOLS[0].function.name } };
  const jsonSchema = { type: "json_schema", json_schema: { name: "answer", schema: SCHEMA } };
  const [closing] = engine.core.codec.encode("}");
  const out = {};
  out.free = await engine.chat.completions.create(ask({}));
  out.schema = await engine.chat.completions.create(ask({ response_format: jsonSchema }));
  out.schemaStream = await drain(await engine.chat.completions.create(
    ask({ response_format: jsonSchema, stream: true, temperature: 1, seed: 7 })));
  // an unbounded object: favour the closing brace so that a random model ends it
  out.object = await engine.chat.completions.create(
    ask({ response_format: { type: "json_object" }, logit_bias: { [closing]: 8 } }));
  out.grammar = await engine.chat.completions.create(ask({ response_format: { type: "grammar", grammar: GRAMMAR } }));
  out.tool = await engine.chat.completions.create(ask({ tools: TOOLS, tool_choice: named }));
  out.toolStream = await drain(await engine.chat.completions.create(
    ask({ tools: TOOLS, tool_choice: "required", stream: true, temperature: 1, seed: 3 })));
  try {
    await engine.chat.completions.create(ask({ response_format: { type: "grammar", grammar: "root ::= nowhere" } }));
  } catch (err) {
    out.refused = { name: err.name, param: err.param, message: err.message };
  }
  await engine.unload();
  return out;
}
