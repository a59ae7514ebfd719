// The artifact's vocabulary as XGrammar's TokenizerInfo takes it: each id's token as
// tokenizer.json stores it (byte-level "Ġthe", sentencepiece "▁the" / "<0x0A>"), and the
// decoding that turns those strings into bytes, read from the tokenizer's decoder. Special
// added tokens get "" so that no grammar can emit them (EOS is allowed as a stop token), and so
// do tokens holding a byte that never occurs in UTF-8 (C0, C1, F5-FF): XGrammar 0.1.27 takes
// C0 and C1 as lead bytes, so "\xC1\xBF" could pass as one character of a string and decode
// to two U+FFFD, past a maxLength.

// decoder type -> what it says of the vocabulary's encoding
const DECODING = { ByteLevel: "byte_level", ByteFallback: "byte_fallback", Metaspace: "byte_fallback" };

// The steps of a decoder, pre-tokenizer or normalizer, Sequences flattened.
const decoders = (d) => (!d ? [] : d.type === "Sequence"
  ? (d.decoders ?? d.pretokenizers ?? d.normalizers ?? []).flatMap(decoders) : [d]);

function vocabType(decoder) {
  const found = decoders(decoder).map((d) => DECODING[d.type]).filter(Boolean);
  if (found.includes("byte_level")) return "byte_level";
  return found.length ? "byte_fallback" : "raw";
}

// A sentencepiece tokenizer adds a space before the text it encodes (and strips it on decode).
function prependsSpace(json) {
  const all = [...decoders(json.decoder), ...decoders(json.pre_tokenizer), ...decoders(json.normalizer)];
  return all.some((d) => (d.type === "Metaspace" && (d.add_prefix_space || ["always", "first"].includes(d.prepend_scheme)))
    || (d.type === "Prepend" && d.prepend === "▁") || (d.type === "Strip" && d.start > 0));
}

// vocab type -> a token string that holds a byte UTF-8 never uses (byte-level maps bytes
// 0xA1-0xFF, except 0xAD, to the code point of the same number)
const NOT_UTF8 = {
  byte_level: /[\u00C0\u00C1\u00F5-\u00FF]/,
  byte_fallback: /<0x(C0|C1|F[5-9A-F])>/i,
  raw: /(?!)/,
};

// -> {encodedVocab (length vocabSize, the logits' width), vocabType, prependSpace}
export function vocabularyOf(json, vocabSize) {
  const encodedVocab = new Array(vocabSize).fill("");
  const put = (token, id) => {
    if (id < vocabSize) encodedVocab[id] = token;
  };
  const vocab = json.model?.vocab;
  if (Array.isArray(vocab)) vocab.forEach(([token], id) => put(token, id)); // Unigram: [token, score]
  else for (const [token, id] of Object.entries(vocab ?? {})) put(token, id);
  const type = vocabType(json.decoder);
  encodedVocab.forEach((token, id) => {
    if (NOT_UTF8[type].test(token)) encodedVocab[id] = "";
  });
  for (const t of json.added_tokens ?? []) put(t.special ? "" : t.content, t.id);
  return { encodedVocab, vocabType: type, prependSpace: prependsSpace(json) };
}
