// WebLLM's GPU queries, answered from a fresh adapter as WebLLM answers them (no model needed):
// the vendor ("" when the browser does not say) and maxStorageBufferBindingSize, by which an
// app guesses whether a phone-sized GPU can hold a model.

import { requestAdapter } from "./gpu.js";
import { log } from "./log.js";

const GIB = 2 ** 30;

export async function gpuVendor() {
  return (await requestAdapter()).info?.vendor ?? "";
}

export async function maxStorageBufferBindingSize() {
  const size = (await requestAdapter()).limits.maxStorageBufferBindingSize;
  if (size < GIB) log.warn(`maxStorageBufferBindingSize is ${Math.ceil(size / 2 ** 20)} MB: only small models fit this GPU`);
  return size;
}
