// One preprocessed image (Float32Array [3, H, W]) -> the named inputs of a Qwen-VL
// `embed_image`, as mlcx/runtime/vision/qwen_inputs.py computes them (its docstring says how
// transformers does): patches in merge order, each patch's (row, column), Qwen2.5-VL's window
// tables and Qwen3-VL's position-grid taps (float32 as torch computes them).
// web/test/vectors/qwen_vl.json holds the two equal bit for bit.

const f32 = Math.fround;

// [row, column] of each patch in merge order (2x2 groups adjacent, groups row-major).
function mergeOrder(rows, cols, merge) {
  const r = [], c = [];
  for (let gr = 0; gr < rows / merge; gr++)
    for (let gc = 0; gc < cols / merge; gc++)
      for (let mr = 0; mr < merge; mr++)
        for (let mc = 0; mc < merge; mc++) {
          r.push(gr * merge + mr);
          c.push(gc * merge + mc);
        }
  return [r, c];
}

// [patches x 3*patch*patch] in merge order, each patch flattened (channel, y, x).
function patchify(frame, height, width, patch, [r, c]) {
  const features = 3 * patch * patch;
  const out = new Float32Array(r.length * features);
  r.forEach((row, i) => {
    let at = i * features;
    for (let ch = 0; ch < 3; ch++)
      for (let y = 0; y < patch; y++) {
        const from = (ch * height + row * patch + y) * width + c[i] * patch;
        out.set(frame.subarray(from, from + patch), at);
        at += patch;
      }
  });
  return out;
}

// [the merged tokens window by window, the window of each].
function windowOrder(rows, cols, side) {
  const order = [], window = [];
  let count = 0;
  for (let top = 0; top < rows; top += side)
    for (let left = 0; left < cols; left += side, count++)
      for (let y = top; y < Math.min(top + side, rows); y++)
        for (let x = left; x < Math.min(left + side, cols); x++) {
          order.push(y * cols + x);
          window.push(count);
        }
  return [order, window];
}

// Bilinear taps (floor, floor + 1 clamped) and weights of one patch index along an axis.
function axisTaps(index, size, side) {
  const src = f32(f32(index * (side - 1)) / Math.max(size - 1, 1));
  const floor = Math.floor(src);
  const weight = (k) => Math.max(f32(1 - Math.abs(f32(f32(src - floor) - k))), 0);
  const clamp = (t) => Math.min(Math.max(t, 0), side - 1);
  return [[clamp(floor), clamp(floor + 1)], [weight(0), weight(1)]];
}

function gridTaps(r, c, rows, cols, side) {
  const index = new Int32Array(r.length * 4);
  const weight = new Float32Array(r.length * 4);
  r.forEach((row, i) => {
    const [ht, hw] = axisTaps(row, rows, side);
    const [wt, ww] = axisTaps(c[i], cols, side);
    for (let a = 0; a < 2; a++)
      for (let b = 0; b < 2; b++) {
        index[i * 4 + a * 2 + b] = ht[a] * side + wt[b];
        weight[i * 4 + a * 2 + b] = f32(hw[a] * ww[b]);
      }
  });
  return [index, weight];
}

const gather = (array, width, order) => {
  const out = new array.constructor(order.length * width);
  order.forEach((from, i) => out.set(array.subarray(from * width, (from + 1) * width), i * width));
  return out;
};

// cfg: encoder.json's config (the VisionConfig); names: encoder.json's inputs (their order).
// -> {name: {data, shape, dtype}} for each input.
export function qwenInputs(frame, height, width, cfg, names) {
  const p = cfg.patch_size, m = cfg.merge_size;
  const rows = height / p, cols = width / p;
  let [r, c] = mergeOrder(rows, cols, m);
  let patches = patchify(frame, height, width, p, [r, c]);
  const tables = {};
  let taps = null;
  if (cfg.position_grid) taps = gridTaps(r, c, rows, cols, cfg.position_grid);
  if (cfg.window_size) {
    const group = m * m;
    const [order, window] = windowOrder(rows / m, cols / m, cfg.window_size / (p * m));
    const patchOrder = order.flatMap((t) => Array.from({ length: group }, (_, k) => t * group + k));
    patches = gather(patches, 3 * p * p, patchOrder);
    [r, c] = [patchOrder.map((i) => r[i]), patchOrder.map((i) => c[i])];
    if (taps) taps = taps.map((t) => gather(t, 4, patchOrder));
    tables.windows = Int32Array.from(window.flatMap((w) => Array(group).fill(w)));
    const restore = new Int32Array(order.length);
    order.forEach((token, i) => { restore[token] = i; });
    tables.restore = restore;
  }
  const positions = new Int32Array(r.length * 2);
  r.forEach((row, i) => { positions[2 * i] = row; positions[2 * i + 1] = c[i]; });
  const n = r.length;
  const all = {
    patches: { data: patches, shape: [n, 3 * p * p], dtype: "float32" },
    patch_positions: { data: positions, shape: [n, 2], dtype: "int32" },
    windows: { data: tables.windows, shape: [n], dtype: "int32" },
    restore: { data: tables.restore, shape: [n / (m * m)], dtype: "int32" },
    pos_index: { data: taps?.[0], shape: [n, 4], dtype: "int32" },
    pos_weight: { data: taps?.[1], shape: [n, 4], dtype: "float32" },
  };
  return Object.fromEntries(names.map((name) => [name, all[name]]));
}
