// M-RoPE positions of a step's new tokens (Qwen-VL), as mlcx/runtime/core/rope_positions.py
// makes them (transformers' get_rope_index): a text token's time, height and width positions
// are its index plus the shift of the images before it; an image's tokens are at its start
// (after that shift) plus their row and column in its grid of merged tokens; after an image
// the index continues at its start plus the longer side of its grid. The KV cache stays 1-D.
// web/test/vectors/qwen_vl.json holds the two equal.

// Int32Array [3 x count] (row-major) of positions first .. first + count - 1 of a sequence
// whose images are [{start, end, grid: [rows, cols] or null}].
export function tokenPositions(first, count, images) {
  const out = new Int32Array(3 * count);
  const sorted = images.filter((im) => im.grid).sort((a, b) => a.start - b.start);
  for (let k = 0; k < count; k++) {
    const index = first + k;
    let shift = 0, at = null;
    for (const image of sorted) {
      if (index >= image.end) {
        shift += Math.max(...image.grid) - (image.end - image.start);
      } else if (index >= image.start) {
        const local = index - image.start, base = image.start + shift, cols = image.grid[1];
        at = [base, base + Math.floor(local / cols), base + (local % cols)];
        break;
      } else break;
    }
    at ??= [index + shift, index + shift, index + shift];
    for (let row = 0; row < 3; row++) out[row * count + k] = at[row];
  }
  return out;
}
