// Shared by the client scripts: the spec e2e/js_test.go writes, and the
// JSON lines they print for it to check.
import { readFileSync } from 'node:fs';

// readSpec returns the JSON spec at path, keys, values and header values
// decoded from base64 into Buffers (null stays null).
export function readSpec(path) {
  const spec = JSON.parse(readFileSync(path, 'utf8'));
  for (const b of spec.batches ?? []) {
    for (const r of b.records) {
      r.k = r.k === null ? null : Buffer.from(r.k, 'base64');
      r.v = r.v === null ? null : Buffer.from(r.v, 'base64');
      r.h = (r.h ?? []).map(([k, v]) => [k, Buffer.from(v, 'base64')]);
    }
  }
  return spec;
}

// out prints one JSON line; Buffers as base64, bigints as numbers.
export function out(obj) {
  process.stdout.write(JSON.stringify(obj, (_, v) => {
    if (typeof v === 'bigint') return Number(v);
    if (v && v.type === 'Buffer' && Array.isArray(v.data)) return Buffer.from(v.data).toString('base64');
    return v;
  }) + '\n');
}

export const b64 = (b) => (b === null || b === undefined ? null : Buffer.from(b).toString('base64'));
