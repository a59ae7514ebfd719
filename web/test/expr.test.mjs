// node web/test/expr.test.mjs CASES_JSON: checks web/src/expr.js on the cases the Python test
// shares (tests/webgpu/test_expr.py), printing one JSON list of results.
import { evaluate } from "../src/expr.js";

const cases = JSON.parse(process.argv[2]);
console.log(JSON.stringify(cases.map(([tree, env]) => evaluate(tree, env))));
