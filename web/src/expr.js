// Evaluate the WebGPU plan's integer expression trees; mirrors mlcx/runtime/backends/wgpu_expr.py.
// A tree is a number, a variable name, or [op, ...operands]; floordiv/floormod round toward
// minus infinity, div/mod toward zero, comparisons and logic give 0 or 1.

const truncDiv = (a, b) => Math.trunc(a / b);

const OPS = {
  add: (a, b) => a + b,
  sub: (a, b) => a - b,
  mul: (a, b) => a * b,
  floordiv: (a, b) => Math.floor(a / b),
  floormod: (a, b) => a - b * Math.floor(a / b),
  div: truncDiv,
  mod: (a, b) => a - b * truncDiv(a, b),
  min: Math.min,
  max: Math.max,
  eq: (a, b) => Number(a === b),
  ne: (a, b) => Number(a !== b),
  lt: (a, b) => Number(a < b),
  le: (a, b) => Number(a <= b),
  gt: (a, b) => Number(a > b),
  ge: (a, b) => Number(a >= b),
  and: (a, b) => Number(Boolean(a) && Boolean(b)),
  or: (a, b) => Number(Boolean(a) || Boolean(b)),
  not: (a) => Number(!a),
};

export function evaluate(tree, env) {
  if (typeof tree === "number") return tree;
  if (typeof tree === "string") {
    if (!(tree in env)) throw new Error(`plan expression uses unbound variable ${tree}`);
    return env[tree];
  }
  const [op, ...args] = tree;
  if (op === "select") {
    return evaluate(args[0], env) ? evaluate(args[1], env) : evaluate(args[2], env);
  }
  const fn = OPS[op];
  if (!fn) throw new Error(`unknown plan expression operator ${op}`);
  return fn(...args.map((a) => evaluate(a, env)));
}
