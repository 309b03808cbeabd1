// Every behaviour vector in tests/vectors/, run by the wasm build under Node,
// must give byte for byte the report the native run wrote, and pass.
//
// The native reports come from `cargo test -p svcnet-core --test vectors`
// (target/vector-reports/native/<name>.json); `make wasm-vectors` runs that
// first. The wasm reports are written to target/vector-reports/wasm/ so a
// difference can be read with `diff -u`.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { loadWasm, nativeReportsDir, root, vectorsDir, wasmReportsDir } from './wasm.mjs';

const { runVector } = loadWasm();
const vectors = readdirSync(vectorsDir)
  .filter((f) => f.endsWith('.yaml'))
  .sort();
mkdirSync(wasmReportsDir, { recursive: true });

const relative = (p) => path.relative(root, p);

/** The first line where two texts differ, for a readable failure. */
function firstDifference(a, b) {
  const left = a.split('\n');
  const right = b.split('\n');
  for (let i = 0; i < Math.max(left.length, right.length); i++) {
    if (left[i] !== right[i]) {
      return `line ${i + 1}:\n  native: ${JSON.stringify(left[i])}\n  wasm:   ${JSON.stringify(right[i])}`;
    }
  }
  return 'no line differs';
}

/** Every failure a report records, as the native runner lists them. */
function failures(report) {
  const out = [...(report.failures ?? [])];
  for (const step of report.steps) {
    for (const f of step.failures ?? []) out.push(`step ${step.step} (${step.action}): ${f}`);
  }
  return out;
}

test('the vector suite is there', () => {
  assert.ok(vectors.length >= 10, `expected the vector suite in ${relative(vectorsDir)}, found ${vectors.length} files`);
});

for (const file of vectors) {
  const name = file.replace(/\.yaml$/, '');
  test(`vector ${name}: wasm report is byte-identical to the native one and passes`, () => {
    const vectorPath = path.join(vectorsDir, file);
    const nativePath = path.join(nativeReportsDir, `${name}.json`);
    assert.ok(
      existsSync(nativePath),
      `no native report ${relative(nativePath)}: run \`cargo test -p svcnet-core --test vectors\` (make wasm-vectors does)`,
    );
    assert.ok(
      statSync(nativePath).mtimeMs >= statSync(vectorPath).mtimeMs,
      `${relative(nativePath)} is older than ${relative(vectorPath)}: run \`cargo test -p svcnet-core --test vectors\` again`,
    );
    const wasm = runVector(readFileSync(vectorPath, 'utf8'));
    const wasmPath = path.join(wasmReportsDir, `${name}.json`);
    writeFileSync(wasmPath, wasm);
    const native = readFileSync(nativePath, 'utf8');
    assert.ok(
      wasm === native,
      `the wasm report differs from the native one at ${firstDifference(native, wasm)}\n` +
        `  diff -u ${relative(nativePath)} ${relative(wasmPath)}`,
    );
    assert.deepEqual(failures(JSON.parse(wasm)), [], `vector ${name} fails`);
  });
}
