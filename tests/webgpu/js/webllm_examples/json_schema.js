// WebLLM's examples/json-schema (simpleStructuredTextExample, with its schema string, and
// harryPotterExample, its schema as typebox writes it), from the documented calls. Changed: the
// import, the model id.
import * as webllm from "/mlcx-web/index.js";

function setLabel(id, text) {
  const label = document.getElementById(id);
  if (label == null) throw Error("Cannot find label " + id);
  label.innerText = text;
}

export const SCHEMA1 = `{
        "properties": {
            "size": {"title": "Size", "type": "integer"},
            "is_accepted": {"title": "Is Accepted", "type": "boolean"},
            "num": {"title": "Num", "type": "number"}
        },
        "required": ["size", "is_accepted", "num"],
        "title": "Schema", "type": "object"
    }`;

// typebox's Type.Object({...}) of the Harry Potter example, as JSON.stringify writes it
const enumOf = (values) => ({ anyOf: values.map((v) => ({ const: v, type: "string" })) });
export const HARRY = JSON.stringify({
  type: "object",
  properties: {
    name: { type: "string" },
    house: enumOf(["Gryffindor", "Hufflepuff", "Ravenclaw", "Slytherin"]),
    blood_status: enumOf(["Pure-blood", "Half-blood", "Muggle-born"]),
    occupation: enumOf(["Student", "Professor", "Ministry of Magic", "Other"]),
    wand: { type: "object", properties: { wood: { type: "string" }, core: { type: "string" }, length: { type: "number" } },
            required: ["wood", "core", "length"] },
    alive: { type: "boolean" },
    patronus: { type: "string" },
  },
  required: ["name", "house", "blood_status", "occupation", "wand", "alive", "patronus"],
});

async function ask(engine, content, schema) {
  const reply = await engine.chatCompletion({
    stream: false,
    messages: [{ role: "user", content }],
    max_tokens: 128,
    response_format: { type: "json_object", schema: schema },
  });
  return { reply, output: await engine.getMessage() };
}

export async function main() {
  const initProgressCallback = (report) => setLabel("init-label", report.text);
  const engine = await webllm.CreateMLCEngine("tiny-llm", { initProgressCallback: initProgressCallback, logLevel: "INFO" });
  const simple = await ask(engine, "Generate a json containing three fields: an integer field named size, a " +
    "boolean field named is_accepted, and a float field named num.", SCHEMA1);
  const harry = await ask(engine, "Hermione Granger is a character in Harry Potter. Please fill in the following " +
    "information about this character in JSON format.", HARRY);
  console.log(simple, harry, harry.reply.usage.extra);
  return { simple, harry };
}
