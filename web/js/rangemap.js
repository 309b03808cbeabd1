// The range map: a service CIDR drawn with its static band, its dynamic
// band, the `kubernetes` address and every allocated ClusterIP. Band
// boundaries and counts come from the core's `cluster.usage()`; the map
// only lays them out: one cell per address up to 256 addresses, otherwise
// 256 equal blocks with a count each.

import { esc, ipToBig, bigToIp, parseCidr } from './format.js';

const CELLS = 256;
/** Whether the list of allocated ClusterIPs is open; kept across redraws. */
let listOpen = false;

/** Which band (`static` / `dynamic`) holds `ip`, from the core's usage. */
export function bandOf(usage, ip) {
  const v = ipToBig(ip);
  for (const u of usage?.clusterIPs ?? []) {
    const c = parseCidr(u.cidr);
    if (!c || c.v6 !== ip.includes(':') || v < c.base || v >= c.base + c.size) continue;
    if (u.staticFirst && v >= ipToBig(u.staticFirst) && v <= ipToBig(u.staticLast)) return 'static';
    return 'dynamic';
  }
  return null;
}

const fmt = (n) => BigInt(n).toLocaleString('en-US');

/** The allocated ClusterIPs with their Services: [{ ip, name }]. */
export function allocations(services) {
  const out = [];
  for (const s of services) {
    for (const ip of s.spec.clusterIPs ?? [s.spec.clusterIP]) {
      if (ip && ip !== 'None') out.push({ ip, name: `${s.metadata.namespace && s.metadata.namespace !== 'default' ? `${s.metadata.namespace}/` : ''}${s.metadata.name}` });
    }
  }
  return out;
}

/** Draws one map per service CIDR into `el`. `fresh` holds IPs to highlight. */
export function renderRangeMap(el, usage, services, fresh = new Set()) {
  const allocated = allocations(services);
  el.innerHTML = (usage.clusterIPs ?? []).map((u, i) => rangeHtml(u, i, allocated, fresh)).join('');
  for (const cells of el.querySelectorAll('.cells')) {
    const detail = el.querySelector(`#${cells.dataset.detail}`);
    const show = (ev) => {
      const cell = ev.target.closest('.cell');
      if (cell) detail.textContent = cell.dataset.info;
    };
    cells.addEventListener('mouseover', show);
    cells.addEventListener('focusin', show);
    cells.addEventListener('keydown', (ev) => moveFocus(cells, ev));
  }
  for (const d of el.querySelectorAll('details.range-list')) d.addEventListener('toggle', () => { listOpen = d.open; });
}

/**
 * The map is one tab stop: the cell that holds tabindex 0 (the last one
 * visited, at first the `kubernetes` cell or the first allocated one);
 * arrow keys, Home and End move inside it, row by row as it is drawn.
 */
function moveFocus(cells, ev) {
  const all = [...cells.querySelectorAll('.cell')];
  const at = all.indexOf(ev.target.closest('.cell'));
  if (at < 0) return;
  const columns = Number(cells.dataset.columns) || 1;
  const step = { ArrowLeft: -1, ArrowRight: 1, ArrowUp: -columns, ArrowDown: columns }[ev.key];
  let to;
  if (step !== undefined) to = Math.min(all.length - 1, Math.max(0, at + step));
  else if (ev.key === 'Home') to = 0;
  else if (ev.key === 'End') to = all.length - 1;
  else return;
  ev.preventDefault();
  all[at].tabIndex = -1;
  all[to].tabIndex = 0;
  all[to].focus();
}

function rangeHtml(u, index, allocated, fresh) {
  const cidr = parseCidr(u.cidr);
  const v6 = cidr.v6;
  const mine = allocated.filter((a) => a.ip.includes(':') === v6 && ipToBig(a.ip) >= cidr.base && ipToBig(a.ip) < cidr.base + cidr.size);
  const byOffset = new Map(mine.map((a) => [ipToBig(a.ip) - cidr.base, a]));
  const first = cidr.base + 1n; // the network address is never handed out
  const hasBands = u.staticFirst != null;
  const sFirst = hasBands ? ipToBig(u.staticFirst) - cidr.base : null;
  const sLast = hasBands ? ipToBig(u.staticLast) - cidr.base : null;
  const dFirst = hasBands ? ipToBig(u.dynamicFirst) - cidr.base : 1n;
  const dLast = hasBands ? ipToBig(u.dynamicLast) - cidr.base : 1n + BigInt(u.size) - 1n;
  const lo = hasBands ? sFirst : dFirst;
  const hi = dLast;
  const kubernetesOffset = 1n;

  const small = cidr.size <= BigInt(CELLS);
  const count = small ? Number(cidr.size) : CELLS;
  const block = small ? 1n : cidr.size / BigInt(CELLS);
  const columns = small ? Math.min(count, 16) : 32;
  const cells = [];
  let k8sAt = -1;
  let usedAt = -1;
  for (let i = 0; i < count; i++) {
    const from = BigInt(i) * block;
    const to = from + block - 1n;
    const inside = mine.filter((a) => {
      const o = ipToBig(a.ip) - cidr.base;
      return o >= from && o <= to;
    });
    const classes = ['cell'];
    let band;
    if (to < lo || from > hi) band = 'reserved';
    else if (!hasBands) band = 'dynamic';
    else if (to <= sLast && from >= sFirst) band = 'static';
    else if (from >= dFirst) band = 'dynamic';
    else band = 'mixed';
    classes.push(band);
    const hasK8s = kubernetesOffset >= from && kubernetesOffset <= to && inside.some((a) => a.name === 'kubernetes');
    if (inside.length) classes.push('used');
    if (hasK8s) classes.push('k8s');
    if (hasK8s && k8sAt < 0) k8sAt = i;
    if (inside.length && usedAt < 0) usedAt = i;
    if (inside.some((a) => fresh.has(a.ip))) classes.push('fresh');
    const addrFrom = bigToIp(cidr.base + from, v6);
    const addrTo = bigToIp(cidr.base + to, v6);
    let info;
    let label;
    if (small) {
      const a = byOffset.get(from);
      const what = band === 'reserved'
        ? (from === 0n ? 'the network address, never handed out' : 'the broadcast address, never handed out')
        : `${band} band`;
      info = `${addrFrom}: ${a ? `allocated to Service ${a.name}` : 'free'} (${what})`;
      label = a ? (a.name === 'kubernetes' ? 'k8s' : a.name.slice(0, 4)) : String(Number(from) % 1000);
      if (!a && band !== 'reserved') label = addrFrom.split(/[.:]/).pop();
      if (band === 'reserved') label = '×';
    } else {
      const parts = [];
      if (band === 'mixed') parts.push(`static band up to ${u.staticLast}, dynamic band from ${u.dynamicFirst}`);
      else if (band !== 'reserved') parts.push(`${band} band`);
      info = `${addrFrom} – ${addrTo} (${fmt(block)} addresses, ${parts.join('') || 'reserved'}): ${inside.length ? `${inside.length} allocated: ${inside.slice(0, 6).map((a) => `${a.ip} ${a.name}`).join(', ')}${inside.length > 6 ? ', …' : ''}` : 'none allocated'}`;
      label = inside.length ? String(inside.length) : '';
    }
    cells.push(`<span role="listitem" class="${classes.join(' ')}" tabindex="-1" data-from="${esc(addrFrom)}" data-info="${esc(info)}" aria-label="${esc(info)}" title="${esc(info)}">${esc(label)}</span>`);
  }

  // The one tab stop: kubernetes's cell, else the first allocated one, else the first.
  const tabStop = k8sAt >= 0 ? k8sAt : Math.max(0, usedAt);
  cells[tabStop] = cells[tabStop].replace(' tabindex="-1"', ' tabindex="0"');
  const total = cidr.size;
  const staticSize = hasBands ? sLast - sFirst + 1n : 0n;
  const staticPct = hasBands ? Math.max(2, Number((staticSize * 10000n) / total) / 100) : 0;
  const detailId = `range-detail-${index}`;
  const list = mine
    .sort((a, b) => (ipToBig(a.ip) < ipToBig(b.ip) ? -1 : 1))
    .map((a) => `<tr class="${fresh.has(a.ip) ? 'flash' : ''}"><td class="mono range-ip" data-ip="${esc(a.ip)}">${esc(a.ip)}</td><td class="mono">${esc(a.name)}</td><td>${a.name === 'kubernetes' ? '<span class="tag k8s">first address</span>' : `<span class="tag ${bandOf({ clusterIPs: [u] }, a.ip)}">${bandOf({ clusterIPs: [u] }, a.ip)} band</span>`}</td></tr>`)
    .join('');
  return `<div class="range" data-cidr="${esc(u.cidr)}">
    <div class="range-summary">
      <span><b>${esc(u.cidr)}</b> ${esc(u.family)}</span>
      <span>${fmt(u.size)} usable addresses</span>
      <span>${fmt(u.used)} allocated</span>
      <span>${fmt(u.free)} free</span>
    </div>
    <div class="bands" aria-hidden="true">
      ${hasBands ? `<div class="static" style="width:${staticPct}%"></div>` : ''}<div class="dynamic" style="flex:1"></div>
    </div>
    <div class="band-labels" aria-hidden="true"><span>${esc(bigToIp(cidr.base, v6))}</span><span>${hasBands ? `static ${esc(u.staticFirst)}–${esc(u.staticLast)} · dynamic ${esc(u.dynamicFirst)}–${esc(u.dynamicLast)}` : 'one band (range too small to split)'}</span><span>${esc(bigToIp(cidr.base + cidr.size - 1n, v6))}</span></div>
    <div class="cells ${small ? '' : 'large'}" role="list" aria-label="${esc(`${u.cidr}: ${small ? 'one cell per address' : `${CELLS} blocks of ${fmt(block)} addresses`}`)}" data-detail="${detailId}" data-columns="${columns}" style="grid-template-columns: repeat(${columns}, minmax(0, 1fr))">${cells.join('')}</div>
    <div class="legend" aria-hidden="true">
      ${hasBands ? '<span><i style="background:var(--static-soft);border:1px solid var(--static)"></i>static band</span>' : ''}
      <span><i style="background:var(--dynamic-soft)"></i>dynamic band</span>
      <span><i style="background:var(--k8s)"></i>kubernetes</span>
      <span><i style="background:var(--used)"></i>allocated</span>
      <span><i style="background:#eceff4"></i>never handed out</span>

    </div>
    <div class="range-detail" id="${detailId}" aria-live="polite">${small ? 'One cell per address. Point at one, or Tab to the map and use the arrow keys, for details.' : `Each block holds ${fmt(block)} addresses; its number is how many are allocated. Point at a block, or Tab to the map and use the arrow keys, for its addresses.`}</div>
    <details class="range-list"${listOpen ? ' open' : ''}><summary>${mine.length} allocated ClusterIP${mine.length === 1 ? '' : 's'}</summary><table class="grid" aria-label="Allocated ClusterIPs in ${esc(u.cidr)}"><thead><tr><th scope="col">ClusterIP</th><th scope="col">Service</th><th scope="col">Where</th></tr></thead><tbody>${list}</tbody></table></details>
  </div>`;
}

/** The plain-words explanation of the bands for this usage. */
export function rangeExplanation(usage) {
  const u = usage.clusterIPs?.[0];
  if (!u) return '';
  if (u.staticFirst == null) {
    return `A new Service gets a random free address. This range is too small to split into a static and a dynamic band. The first address always belongs to kubernetes.`;
  }
  return `A new Service gets a random free address from the dynamic band; the small static band below it is kept for addresses picked by hand (spec.clusterIP), so the two rarely collide. The first address always belongs to kubernetes.`;
}
