// Writes FILE.br (Brotli, quality 11) and FILE.gz (gzip, level 9) beside
// each FILE given, for a server that sends them with Content-Encoding
// (scripts/serve-precompressed.py, what `make playground` runs). Node's own
// zlib: nothing to install. Prints each file's three sizes.
//
// Usage: node scripts/precompress.mjs FILE...

import { readFileSync, writeFileSync } from 'node:fs';
import { basename } from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';

for (const file of process.argv.slice(2)) {
  const data = readFileSync(file);
  const br = brotliCompressSync(data, {
    params: {
      [constants.BROTLI_PARAM_QUALITY]: constants.BROTLI_MAX_QUALITY,
      [constants.BROTLI_PARAM_SIZE_HINT]: data.length,
    },
  });
  const gz = gzipSync(data, { level: 9 });
  writeFileSync(`${file}.br`, br);
  writeFileSync(`${file}.gz`, gz);
  console.log(`${basename(file)}: ${data.length} bytes, ${gz.length} gzip, ${br.length} brotli`);
}
