// The scenario in the address bar: the service CIDR, the seed, the shape
// of the control plane and the commands run, as base64url JSON after `#s=`. Replaying the commands on the
// same range and seed rebuilds the same cluster, addresses included.

const PREFIX = 's=';

function toBase64Url(text) {
  const bytes = new TextEncoder().encode(text);
  let bin = '';
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function fromBase64Url(text) {
  const bin = atob(text.replace(/-/g, '+').replace(/_/g, '/'));
  return new TextDecoder().decode(Uint8Array.from(bin, (c) => c.charCodeAt(0)));
}

/**
 * `{ cidr, seed, controlPlane?, history: [{ line, stdin?, at? }] }` →
 * `s=...`. Each command is its line, or `[line, stdin or null, at]` with
 * the time it ran (milliseconds after the cluster started), so ages replay.
 */
export function encodeState({ cidr, seed, controlPlane = 'single', history }) {
  const h = history.map((e) => (e.stdin == null && e.at == null ? e.line : [e.line, e.stdin ?? null, e.at ?? 0]));
  const p = controlPlane === 'single' ? undefined : controlPlane;
  return PREFIX + toBase64Url(JSON.stringify({ c: cidr, s: seed, p, h }));
}

/** The inverse of encodeState; null for anything else. */
export function decodeState(hash) {
  if (!hash.startsWith(PREFIX)) return null;
  try {
    const v = JSON.parse(fromBase64Url(hash.slice(PREFIX.length)));
    if (typeof v.c !== 'string' || !Number.isSafeInteger(v.s) || !Array.isArray(v.h)) return null;
    if (v.p !== undefined && typeof v.p !== 'string') return null;
    const history = v.h.map((e) => {
      if (typeof e === 'string') return { line: e };
      const entry = { line: String(e[0]) };
      if (e[1] != null) entry.stdin = String(e[1]);
      if (Number.isSafeInteger(e[2]) && e[2] >= 0) entry.at = e[2];
      return entry;
    });
    return { cidr: v.c, seed: v.s, controlPlane: v.p ?? 'single', history };
  } catch {
    return null;
  }
}
