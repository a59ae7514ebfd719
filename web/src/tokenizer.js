// Text <-> token ids for an artifact (tokenizer.json + mlcx-tokenizer.json), as
// mlcx/runtime/text/tokenizer.py does it: the tokenizer.json post-processor never runs, BOS is
// prepended here when the model wants one, and the chat template renders with Jinja.

import { Tokenizer } from "@huggingface/tokenizers";
import { Template } from "@huggingface/jinja";

import { modelFormat } from "./reasoning.js";
import { templateMessages, withGenericTools } from "./tool_prompt.js";

// mlcx/runtime/text/chat_template.py's FALLBACK_TEMPLATE, for models that ship none.
const FALLBACK_TEMPLATE =
  "{% for message in messages %}{{ message['role'] + ': ' + message['content'] + '\n' }}" +
  "{% endfor %}{% if add_generation_prompt %}{{ 'assistant:' }}{% endif %}";

export class TextCodec {
  static async load(baseUrl, fetchFn = fetch) {
    const [json, meta] = await Promise.all(
      ["tokenizer.json", "mlcx-tokenizer.json"].map(async (f) => (await fetchFn(new URL(f, baseUrl))).json()));
    return new TextCodec(json, meta);
  }

  constructor(tokenizerJson, meta) {
    this.meta = meta;
    this.tokenizerJson = tokenizerJson; // its vocabulary, read again for grammars (vocab.js)
    this.tokenizer = new Tokenizer(tokenizerJson, { bos_token: meta.bos_token, eos_token: meta.eos_token });
    this.template = new Template(meta.chat_template ?? FALLBACK_TEMPLATE);
    // Whether the template renders tools itself (reads `tools`, Hugging Face's convention);
    // a word test where Python asks Jinja for the template's variables.
    this.knowsTools = /\btools\b/.test(meta.chat_template ?? "");
    this.eosIds = new Set(meta.eos_token_ids);
    // harmony's markers are special tokens the reply parser reads (reasoning.js)
    this.keepSpecial = modelFormat(this).keepsSpecialTokens;
  }

  encode(text, addSpecialTokens = false) {
    const ids = this.tokenizer.encode(text, { add_special_tokens: false }).ids;
    const bos = this.meta.bos_token_id;
    return addSpecialTokens && this.meta.add_bos && bos !== null ? [bos, ...ids] : ids;
  }

  decode(ids) {
    return this.tokenizer.decode(ids, { skip_special_tokens: !this.keepSpecial });
  }

  // One token's own text, special tokens included (logprobs name tokens by it).
  piece(id) {
    return this.tokenizer.decode([id], { skip_special_tokens: false });
  }

  // Token ids of a conversation, and the tools it may call, ready for the reply.
  chatPrompt(messages, tools = null) {
    return this.encode(this.chatText(messages, tools), false);
  }

  // The conversation as the chat template writes it.
  chatText(messages, tools = null) {
    const checked = templateMessages(messages);
    return this.template.render({
      messages: this.knowsTools ? checked : withGenericTools(checked, tools),
      ...(this.knowsTools && tools?.length ? { tools } : {}),
      add_generation_prompt: true,
      bos_token: this.meta.bos_token ?? "",
      eos_token: this.meta.eos_token ?? "",
    });
  }
}
