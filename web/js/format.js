// Presentation helpers: kubectl-style tables and YAML, and small address
// arithmetic for drawing. No Kubernetes decisions are made here.

/** Rows (the first is the header) as kubectl prints them: each column padded
 * to its widest cell plus three spaces, the last one not padded. */
export function table(rows) {
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => String(r[c] ?? '').length)));
  return rows
    .map((r) => r.map((cell, c) => (c + 1 === r.length ? String(cell) : String(cell).padEnd(widths[c] + 3))).join('').trimEnd())
    .join('\n') + '\n';
}

/** Adds one column at the right of a kubectl table given as text. */
export function addColumn(text, header, cells) {
  const lines = text.replace(/\n$/, '').split('\n');
  const width = Math.max(...lines.map((l) => l.length));
  return lines.map((l, i) => l.padEnd(width + 3) + (i === 0 ? header : cells[i - 1] ?? '')).join('\n') + '\n';
}

/** Keeps the header and the rows whose NAME column is one of `names`. */
export function keepRows(text, names, nameColumn = 0) {
  const lines = text.replace(/\n$/, '').split('\n');
  return [lines[0], ...lines.slice(1).filter((l) => names.includes(l.split(/\s+/)[nameColumn]))].join('\n') + '\n';
}

function scalar(v) {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  const s = String(v);
  const special = s === ''
    || /^[-+]?(\d[\d_]*\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(s) // would read back as a number
    || /^0[xo]/i.test(s)
    || /^(true|false|null|yes|no|on|off|y|n|~)$/i.test(s)
    || /^[\s\-?:,\[\]{}#&*!|>'"%@`]/.test(s)
    || /\s$/.test(s)
    || /: |\s#|[\n\t]/.test(s);
  return special ? JSON.stringify(s) : s;
}

/** JSON data as YAML, keys in the order given (kubectl sorts them; so do we). */
export function toYaml(value, indent = '') {
  if (Array.isArray(value)) {
    if (value.length === 0) return '[]';
    return value
      .map((item) => {
        if (item !== null && typeof item === 'object' && !Array.isArray(item) && Object.keys(item).length) {
          const inner = toYaml(item, indent + '  ');
          return `${indent}- ${inner.slice(indent.length + 2)}`;
        }
        return `${indent}- ${toYaml(item, indent + '  ').trimStart()}`;
      })
      .join('\n');
  }
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value).sort();
    if (keys.length === 0) return '{}';
    return keys
      .map((k) => {
        const v = value[k];
        const key = scalar(k);
        if (Array.isArray(v) && v.length) return `${indent}${key}:\n${toYaml(v, indent)}`;
        if (v !== null && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length) {
          return `${indent}${key}:\n${toYaml(v, indent + '  ')}`;
        }
        return `${indent}${key}: ${toYaml(v, indent + '  ').trimStart()}`;
      })
      .join('\n');
  }
  return indent + scalar(value);
}

/** JSON.stringify that writes BigInts as numbers. */
export function toJson(value) {
  return JSON.stringify(value, (_, v) => (typeof v === 'bigint' ? Number(v) : v), 2);
}

/** IPv4 dotted quad → number; IPv6 → BigInt. */
export function ipToBig(ip) {
  if (ip.includes(':')) {
    const [head, tail = ''] = ip.split('::');
    const h = head ? head.split(':') : [];
    const t = tail ? tail.split(':') : [];
    const groups = ip.includes('::') ? [...h, ...Array(8 - h.length - t.length).fill('0'), ...t] : h;
    return groups.reduce((acc, g) => (acc << 16n) + BigInt(parseInt(g || '0', 16)), 0n);
  }
  return ip.split('.').reduce((acc, o) => (acc << 8n) + BigInt(Number(o)), 0n);
}

/** Number/BigInt → address text of the family. */
export function bigToIp(n, v6) {
  n = BigInt(n);
  if (!v6) return [24n, 16n, 8n, 0n].map((s) => String((n >> s) & 255n)).join('.');
  const groups = [];
  for (let i = 7; i >= 0; i--) groups.push(((n >> BigInt(i * 16)) & 0xffffn).toString(16));
  // Compress the longest run of zero groups, as the usual text form does.
  let best = [-1, 0];
  for (let i = 0; i < 8; ) {
    if (groups[i] !== '0') { i++; continue; }
    let j = i;
    while (j < 8 && groups[j] === '0') j++;
    if (j - i > best[1]) best = [i, j - i];
    i = j;
  }
  if (best[1] < 2) return groups.join(':');
  return `${groups.slice(0, best[0]).join(':')}::${groups.slice(best[0] + best[1]).join(':')}`;
}

/** `10.96.0.0/12` → { base: BigInt, bits, v6, size: BigInt }, or null. */
export function parseCidr(text) {
  const m = /^([0-9a-fA-F:.]+)\/(\d+)$/.exec(text.trim());
  if (!m) return null;
  const v6 = m[1].includes(':');
  const bits = Number(m[2]);
  const total = v6 ? 128 : 32;
  if (bits > total) return null;
  const size = 1n << BigInt(total - bits);
  const base = (ipToBig(m[1]) / size) * size;
  return { base, bits, v6, size };
}

/** Escapes text for innerHTML. */
export function esc(s) {
  return String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
}
