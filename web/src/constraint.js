// Constrained decoding with XGrammar: one GrammarConstraints per loaded model (the tokenizer
// info, the compiler, the grammars compiled so far), one TokenConstraint per generated choice.
// Each step the tokens the grammar forbids get -inf before sampling; the sampled token
// advances the matcher; a choice ends ("stop") once the grammar admits nothing but a stop token.
// JSON is written with fixed separators (", " and ": ") on one line, as the Python engine's
// llguidance writes it: flexible whitespace would let a model emit blanks and never close.

import { compileOrRefuse, xgrammar } from "./grammar_engine.js";
import { vocabularyOf } from "./vocab.js";

const SEPARATORS = [", ", ": "];
const ONE_LINE = -1;
const CACHED_GRAMMARS = 16;

// XGrammar 0.1.27 writes a string with maxLength, minLength or a pattern as repeats of
// [^"\\\r\n], which lets raw control characters into the JSON (a parser refuses them), where
// its plain strings exclude \0-\x1f: the same exclusion, put into the printed grammar.
const LOOSE_STRING_CHAR = String.raw`[^\"\\\r\n]`;
const STRING_CHAR = String.raw`[^\0-\x1f\"\\]`;

async function compileSchema(xgr, compiler, spec) {
  const grammar = await xgr.Grammar.fromJSONSchema(spec, false, ONE_LINE, SEPARATORS, true);
  const text = grammar.toString().replaceAll(LOOSE_STRING_CHAR, STRING_CHAR);
  grammar.dispose();
  return compiler.compileGrammar(text);
}

// constraint kind -> how XGrammar compiles its spec, and what a refusal calls it
const COMPILE = {
  json_schema: { what: "JSON schema", run: compileSchema },
  grammar: { what: "EBNF grammar", run: (xgr, compiler, spec) => compiler.compileGrammar(spec) },
};

export class GrammarConstraints {
  // `tokenizerJson`: the artifact's tokenizer.json; `vocabSize`: the logits' width.
  constructor(tokenizerJson, vocabSize, stopIds) {
    this.tokenizerJson = tokenizerJson;
    this.vocabSize = vocabSize;
    this.stopIds = [...stopIds];
    this.compiled = new Map(); // `${kind}\n${spec}` -> CompiledGrammar, least recently used first
    this.leases = new Map(); // CompiledGrammar -> requests holding it (freed only when none does)
    this.compiler = null;
    this.turn = Promise.resolve(); // one compile at a time: a refusal's reason is read from stderr
  }

  async start() {
    const xgr = await xgrammar();
    const v = vocabularyOf(this.tokenizerJson, this.vocabSize);
    const info = await xgr.TokenizerInfo.createTokenizerInfo(
      v.encodedVocab, v.vocabType, v.prependSpace, this.vocabSize, this.stopIds);
    return { xgr, compiler: await xgr.GrammarCompiler.createGrammarCompiler(info) };
  }

  // {kind, spec, param} (constraint_request.js) -> its CompiledGrammar, held until `release`;
  // refusals name `param`.
  async compile({ kind, spec, param }) {
    const { xgr, compiler } = await (this.compiler ??= this.start());
    const key = `${kind}\n${spec}`;
    let grammar = this.compiled.get(key);
    if (grammar) this.compiled.delete(key);
    else {
      const compiling = this.turn.then(() =>
        compileOrRefuse(param, COMPILE[kind].what, () => COMPILE[kind].run(xgr, compiler, spec)));
      this.turn = compiling.catch(() => {});
      grammar = await compiling;
    }
    this.compiled.set(key, grammar);
    this.leases.set(grammar, (this.leases.get(grammar) ?? 0) + 1);
    if (this.compiled.size > CACHED_GRAMMARS) {
      const [oldest, dropped] = this.compiled.entries().next().value;
      this.compiled.delete(oldest);
      this.freeIfUnused(dropped);
    }
    return grammar;
  }

  // A request is done with `grammar`.
  release(grammar) {
    this.leases.set(grammar, this.leases.get(grammar) - 1);
    this.freeIfUnused(grammar);
  }

  freeIfUnused(grammar) {
    if (this.leases.get(grammar) || [...this.compiled.values()].includes(grammar)) return;
    this.leases.delete(grammar);
    grammar.dispose();
  }

  // A fresh matcher for one choice.
  async matcher(grammar) {
    const { xgr } = await this.compiler;
    return new TokenConstraint(await xgr.GrammarMatcher.createGrammarMatcher(grammar), this.vocabSize, new Set(this.stopIds));
  }
}

export class TokenConstraint {
  constructor(matcher, vocabSize, stopIds) {
    this.matcher = matcher;
    this.vocabSize = vocabSize;
    this.stopIds = stopIds;
    this.mask = null;
  }

  // The bitmask for the next token (bit t % 32 of word t / 32 set where t is allowed).
  async prepare() {
    this.mask = await this.matcher.getNextTokenBitmask();
  }

  // A copy of `logits` with every forbidden token at -inf.
  masked(logits) {
    const x = Float32Array.from(logits);
    for (let i = 0; i < this.vocabSize; i++) if (!((this.mask[i >>> 5] >>> (i & 31)) & 1)) x[i] = -Infinity;
    return x;
  }

  // Feeds the sampled token and prepares the next mask; true once only a stop token may follow.
  async advance(token) {
    if (!this.matcher.acceptToken(token)) throw new Error(`the grammar matcher refused token ${token}, which its mask allowed`);
    if (this.matcher.isTerminated()) return true;
    await this.prepare();
    return this.onlyStops();
  }

  onlyStops() {
    for (let w = 0; w < this.mask.length; w++) {
      for (let bits = this.mask[w], b = 0; bits; bits >>>= 1, b++) {
        const id = w * 32 + b;
        if (bits & 1 && id < this.vocabSize && !this.stopIds.has(id)) return false;
      }
    }
    return true;
  }

  dispose() {
    this.matcher.dispose();
  }
}
