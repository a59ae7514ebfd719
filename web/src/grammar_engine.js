// @mlc-ai/web-xgrammar (XGrammar compiled to WASM, WebLLM's grammar engine), loaded on the
// first constrained request: a chat without response_format or forced tools never pays for
// its 1 MB script. The library is a UMD script; imported as a module it sets
// globalThis.xgrammar. A service worker cannot import() at all, so service_worker.js imports
// it statically and this finds it already there.
//
// XGrammar refuses a grammar by printing the reason to stderr and aborting the call (the
// runtime stays usable). Its stderr is the console.error it finds when its runtime starts, so
// that start happens here with a forwarder in place, and `compileOrRefuse` reads the reason.

import { InvalidRequestError } from "./errors.js";

let library = null;
let heard = null; // lines XGrammar printed during the current compile, or null

export function xgrammar() {
  return (library ??= load());
}

async function load() {
  const original = console.error;
  console.error = (...args) => (heard ? heard.push(args.join(" ")) : original(...args));
  try {
    const mod = globalThis.xgrammar ? null : await import("@mlc-ai/web-xgrammar");
    const xgr = globalThis.xgrammar ?? mod.default ?? mod;
    (await xgr.Grammar.fromEBNF('root ::= "x"')).dispose(); // starts the runtime now
    return xgr;
  } finally {
    console.error = original;
  }
}

// The reason in XGrammar's "[FATAL] path/file.cc:123: reason" line.
const reasonOf = (lines, err) => {
  const fatal = lines.find((line) => line.includes("[FATAL]"));
  return fatal ? fatal.replace(/^.*?\.cc:\d+:\s*/, "") : err?.message ?? String(err);
};

// `compile()`'s result, or an InvalidRequestError naming `param` and what XGrammar refused.
export async function compileOrRefuse(param, what, compile) {
  heard = [];
  try {
    return await compile();
  } catch (err) {
    throw new InvalidRequestError(`${param}: XGrammar refused the ${what}: ${reasonOf(heard, err)}`, param);
  } finally {
    heard = null;
  }
}
