// WebLLM's examples/embeddings (webllmAPI, then simpleRAG's engine of an embedding model and an
// LLM), from its documented calls. Changed: the import, the model ids (the test's tiny BERT and
// tiny LLM), max_tokens 16 on the RAG answer, and langchain's in-memory store left out: its
// similarity is the cosine written here, and RAG's retrieval of one stored text is that text.
import * as webllm from "/mlcx-web/index.js";

function setLabel(id, text) {
  const label = document.getElementById(id);
  if (label == null) throw Error("Cannot find label " + id);
  label.innerText = text;
}

const initProgressCallback = (report) => setLabel("init-label", report.text);

export const documents_og = ["The Data Cloud!", "Mexico City of Course!"];
export const queries_og = ["what is snowflake?", "Where can I get the best tacos?"];
const query_prefix = "Represent this sentence for searching relevant passages: ";
export const documents = documents_og.map((item) => `[CLS] ${item} [SEP]`);
export const queries = queries_og.map((item) => `[CLS] ${query_prefix}${item} [SEP]`);

const cosine = (a, b) => {
  const dot = (x, y) => x.reduce((s, v, i) => s + v * y[i], 0);
  return dot(a, b) / Math.sqrt(dot(a, a) * dot(b, b));
};

async function webllmAPI() {
  const selectedModel = "tiny-bert";
  const engine = await webllm.CreateMLCEngine(selectedModel, { initProgressCallback: initProgressCallback, logLevel: "INFO" });
  const docReply = await engine.embeddings.create({ input: documents });
  const queryReply = await engine.embeddings.create({ input: queries });
  const similarity = queries_og.map((_, i) => documents_og.map((_, j) => cosine(queryReply.data[i].embedding, docReply.data[j].embedding)));
  return { docReply, queryReply, similarity };
}

async function simpleRAG() {
  const embeddingModelId = "tiny-bert";
  const llmModelId = "tiny-llm";
  const engine = await webllm.CreateMLCEngine([embeddingModelId, llmModelId], { initProgressCallback: initProgressCallback, logLevel: "INFO" });
  const context = "mitochondria is the powerhouse of the cell";
  const stored = await engine.embeddings.create({ input: [context], model: embeddingModelId });
  const prompt = `Answer the question based only on the following context:\n  ${context}\n  \n  Question: What is the powerhouse of the cell?`;
  const reply = await engine.chat.completions.create({ messages: [{ role: "user", content: prompt }], model: llmModelId, max_tokens: 16 });
  console.log(reply.choices[0].message.content);
  return { stored: stored.data[0].embedding.length, reply };
}

export async function main() {
  return { api: await webllmAPI(), rag: await simpleRAG() };
}
