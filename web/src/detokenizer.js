// Token ids -> text deltas, as mlcx/runtime/text/detokenizer.py: each step decodes a short
// window starting on the last prompt tokens (so the first word keeps its leading space) and
// emits what it adds; text ending in U+FFFD (a character a later token may finish) is held.

const REPLACEMENT = "\uFFFD";
const PROMPT_CONTEXT = 5;

export class IncrementalDetokenizer {
  constructor(codec, promptIds = []) {
    this.codec = codec;
    this.ids = promptIds.slice(-PROMPT_CONTEXT);
    this.prefixOffset = 0;
    this.readOffset = this.ids.length;
  }

  decode(ids) {
    return ids.length ? this.codec.decode(ids) : "";
  }

  window() {
    const prefix = this.decode(this.ids.slice(this.prefixOffset, this.readOffset));
    return [prefix, this.decode(this.ids.slice(this.prefixOffset))];
  }

  // The text one more output token completes (possibly "").
  push(token) {
    this.ids.push(token);
    const [prefix, text] = this.window();
    if (text.length <= prefix.length || text.endsWith(REPLACEMENT)) return "";
    this.prefixOffset = this.readOffset;
    this.readOffset = this.ids.length;
    return text.slice(prefix.length);
  }

  flush() {
    const [prefix, text] = this.window();
    this.prefixOffset = this.readOffset = this.ids.length;
    return text.slice(prefix.length);
  }
}
