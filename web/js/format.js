// Presentation helpers: small address arithmetic for drawing, and HTML
// escaping. No Kubernetes decisions are made here.

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
