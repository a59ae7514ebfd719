// numpy's default seeded generator, bit for bit: `np.random.Generator(np.random.PCG64(seed))`
// (SeedSequence -> PCG64 XSL-RR 128/64 -> random() as 53 bits), so a request's seed draws the
// same uniforms here as in the Python sampler (mlcx/runtime/sample/sampling_state.py).

const M32 = 0xffffffff;
const MASK64 = (1n << 64n) - 1n;
const MASK128 = (1n << 128n) - 1n;
const PCG_MULT = 0x2360ed051fc65da44385df649fccf645n;
// numpy/random/bit_generator.pyx: the SeedSequence hash constants
const INIT_A = 0x43b0d7e5;
const MULT_A = 0x931e8875;
const INIT_B = 0x8b51f9dd;
const MULT_B = 0x58f38ded;
const MIX_L = 0xca01f9dd;
const MIX_R = 0x4973f715;
const POOL = 4;

const mul32 = (a, b) => Math.imul(a, b) >>> 0;

function hashmix(value, hash) {
  value = (value ^ hash.c) >>> 0;
  hash.c = mul32(hash.c, MULT_A);
  value = mul32(value, hash.c);
  return (value ^ (value >>> 16)) >>> 0;
}

function mix(x, y) {
  const r = (mul32(MIX_L, x) - mul32(MIX_R, y)) >>> 0;
  return (r ^ (r >>> 16)) >>> 0;
}

// An integer seed as little-endian 32-bit words (0 is one zero word).
function words(seed) {
  let n = BigInt(seed);
  const out = [];
  do {
    out.push(Number(n & BigInt(M32)));
    n >>= 32n;
  } while (n > 0n);
  return out;
}

function seedPool(seed) {
  const entropy = words(seed);
  const hash = { c: INIT_A };
  const pool = Array.from({ length: POOL }, (_, i) => hashmix(entropy[i] ?? 0, hash));
  for (let src = 0; src < POOL; src++) {
    for (let dst = 0; dst < POOL; dst++) {
      if (src !== dst) pool[dst] = mix(pool[dst], hashmix(pool[src], hash));
    }
  }
  for (let src = POOL; src < entropy.length; src++) {
    for (let dst = 0; dst < POOL; dst++) pool[dst] = mix(pool[dst], hashmix(entropy[src], hash));
  }
  return pool;
}

// SeedSequence.generate_state(n, uint64): 2n words from the pool, paired little-endian.
function generateState64(pool, n) {
  let c = INIT_B;
  const w = [];
  for (let i = 0; i < 2 * n; i++) {
    let v = (pool[i % POOL] ^ c) >>> 0;
    c = mul32(c, MULT_B);
    v = mul32(v, c);
    w.push((v ^ (v >>> 16)) >>> 0);
  }
  return Array.from({ length: n }, (_, i) => BigInt(w[2 * i]) | (BigInt(w[2 * i + 1]) << 32n));
}

export class PCG64 {
  constructor(seed) {
    if (!Number.isInteger(seed) || seed < 0) throw new RangeError(`seed must be an integer >= 0, got ${seed}`);
    const [s0, s1, i0, i1] = generateState64(seedPool(seed), 4);
    this.inc = (((i0 << 64n) | i1) << 1n | 1n) & MASK128;
    this.state = 0n;
    this.step();
    this.state = (this.state + ((s0 << 64n) | s1)) & MASK128;
    this.step();
  }

  step() {
    this.state = (this.state * PCG_MULT + this.inc) & MASK128;
  }

  nextUint64() {
    this.step();
    const x = ((this.state >> 64n) ^ this.state) & MASK64;
    const rot = this.state >> 122n;
    return ((x >> rot) | (x << ((64n - rot) & 63n))) & MASK64;
  }

  // A float64 in [0, 1): numpy's Generator.random().
  random() {
    return Number(this.nextUint64() >> 11n) / 9007199254740992;
  }
}

// Draws from `seed` as numpy would; without a seed, Math.random (as numpy's OS entropy).
export function makeRng(seed) {
  if (seed === undefined || seed === null) return Math.random;
  const gen = new PCG64(seed);
  return () => gen.random();
}
