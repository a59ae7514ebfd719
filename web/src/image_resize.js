// Pillow's Image.resize for 8-bit RGB images, reproduced to the bit (its libImaging/Resample.c
// as an algorithm: per output pixel, filter weights over the input span, normalized, rounded to
// 22-bit fixed point; a horizontal pass over the rows the vertical pass needs, then the vertical
// pass, each clipped to 0..255). The filters are Pillow's numbers: 1 lanczos, 2 bilinear,
// 3 bicubic, 4 box, 5 hamming. web/test/vectors/images.json holds it to Pillow.

const PRECISION_BITS = 32 - 8 - 2;
const ONE = 2 ** PRECISION_BITS;
const HALF = 2 ** (PRECISION_BITS - 1);

const sinc = (x) => (x === 0 ? 1 : Math.sin(x * Math.PI) / (x * Math.PI));
// Pillow's hamming window multiplies by float constants (0.54f, 0.46f)
const [H0, H1] = [Math.fround(0.54), Math.fround(0.46)];

export const FILTERS = {
  1: { support: 3, f: (x) => (x >= -3 && x < 3 ? sinc(x) * sinc(x / 3) : 0) },
  2: { support: 1, f: (x) => ((x = Math.abs(x)) < 1 ? 1 - x : 0) },
  3: {
    support: 2,
    f: (x) => {
      x = Math.abs(x);
      if (x < 1) return (1.5 * x - 2.5) * x * x + 1;
      return x < 2 ? (((x - 5) * x + 8) * x - 4) * -0.5 : 0;
    },
  },
  4: { support: 0.5, f: (x) => (x > -0.5 && x <= 0.5 ? 1 : 0) },
  5: {
    support: 1,
    f: (x) => {
      x = Math.abs(x);
      if (x === 0) return 1;
      if (x >= 1) return 0;
      x *= Math.PI;
      return (Math.sin(x) / x) * (H0 + H1 * Math.cos(x));
    },
  },
};

// For each output index: [first input index, count, fixed-point weights].
function coefficients(inSize, outSize, filter) {
  const scale = inSize / outSize;
  const filterScale = Math.max(scale, 1);
  const support = filter.support * filterScale;
  const ss = 1 / filterScale;
  const out = [];
  for (let xx = 0; xx < outSize; xx++) {
    const center = (xx + 0.5) * scale;
    const xmin = Math.max(Math.trunc(center - support + 0.5), 0);
    const xmax = Math.min(Math.trunc(center + support + 0.5), inSize) - xmin;
    const w = [];
    let total = 0;
    for (let x = 0; x < xmax; x++) {
      w.push(filter.f((x + xmin - center + 0.5) * ss));
      total += w[x];
    }
    const fixed = w.map((v) => {
      const k = total !== 0 ? v / total : v;
      return Math.trunc(k < 0 ? -0.5 + k * ONE : 0.5 + k * ONE);
    });
    out.push([xmin, xmax, fixed]);
  }
  return out;
}

const clip8 = (ss) => Math.min(255, Math.max(0, Math.floor(ss / ONE)));

// The horizontal pass over `rows` rows of the source from row `first`.
function horizontal(src, width, coeffs, first, rows) {
  const out = new Uint8Array(rows * coeffs.length * 3);
  for (let y = 0; y < rows; y++) {
    const row = (y + first) * width * 3;
    for (let o = 0; o < coeffs.length; o++) {
      const [xmin, n, k] = coeffs[o];
      for (let c = 0; c < 3; c++) {
        let ss = HALF;
        for (let x = 0; x < n; x++) ss += src[row + (xmin + x) * 3 + c] * k[x];
        out[(y * coeffs.length + o) * 3 + c] = clip8(ss);
      }
    }
  }
  return out;
}

function vertical(src, width, coeffs) {
  const line = width * 3;
  const out = new Uint8Array(line * coeffs.length);
  for (let yy = 0; yy < coeffs.length; yy++) {
    const [ymin, n, k] = coeffs[yy];
    for (let i = 0; i < line; i++) {
      let ss = HALF;
      for (let y = 0; y < n; y++) ss += src[(ymin + y) * line + i] * k[y];
      out[yy * line + i] = clip8(ss);
    }
  }
  return out;
}

// rgb: Uint8Array of width x height RGB pixels, row-major; returns the resized RGB pixels.
// The passes run in Pillow's order (13.0): vertical first where the height shrinks by more
// than twice what the width does, so the order shows in the rounding between passes.
export function resizeRGB(rgb, width, height, outWidth, outHeight, resample = 2) {
  const filter = FILTERS[resample];
  if (!filter) {
    throw new Error(`image resize: filter ${resample} is not supported here (Pillow's 1-5; 0, nearest, is not)`);
  }
  if (outWidth === width && outHeight === height) return Uint8Array.from(rgb);
  const needH = outWidth !== width;
  const needV = outHeight !== height;
  const rows = coefficients(height, outHeight, filter);
  const cols = coefficients(width, outWidth, filter);
  if (height - outHeight > 0 && height - outHeight > (width - outWidth) * 2) {
    const tall = needV ? vertical(rgb, width, rows) : rgb;
    return needH ? horizontal(tall, width, cols, 0, outHeight) : tall;
  }
  let src = rgb;
  if (needH) {
    // only the rows the vertical pass reads
    const first = rows[0][0];
    const last = rows.at(-1)[0] + rows.at(-1)[1];
    src = horizontal(src, width, cols, first, last - first);
    for (const r of rows) r[0] -= first;
  }
  return needV ? vertical(src, outWidth, rows) : src;
}
