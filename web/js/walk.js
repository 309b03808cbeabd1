// The packet walk: one TCP request from a client pod to a Service's
// ClusterIP, through the IPVS virtual server kube-proxy programmed, to the
// pod IPVS picks, and the reply back, with the addresses at every hop.
//
// The virtual servers and real servers are the core's IPVS table for
// node-1 (`cluster.ipvsTable`); which pods exist and whether they are ready
// comes from the EndpointSlices. The round-robin turn is kept here: `rr`
// hands connections to the real servers in order, which is all an
// illustration of one connection needs.

import { esc } from './format.js';

/** The client: a pod on node-1 that is not behind the Service (the last
 * address of node-1's pod range, which the console's IPAM never hands out). */
export const CLIENT = { name: 'client', ip: '10.244.0.254', port: 43120 };

const state = { service: null, port: null, turn: new Map(), last: null, timer: null, known: new Set() };

function hostPort(ip, port) {
  return ip.includes(':') ? `[${ip}]:${port}` : `${ip}:${port}`;
}

function splitHostPort(text) {
  const m = /^\[(.+)\]:(\d+)$/.exec(text) ?? /^(.+):(\d+)$/.exec(text);
  return { ip: m[1], port: Number(m[2]) };
}

/** The virtual server of `ip:port`/TCP in the core's table, or null. */
function virtualServer(table, ip, port, protocol) {
  const want = `${protocol}/${hostPort(ip, port)}`.toLowerCase();
  for (const [key, vs] of Object.entries(table.virtualServers ?? {})) {
    if (key.toLowerCase() === want) return { key, ...vs };
  }
  return null;
}

function walkable(svc) {
  return svc.spec.clusterIP && svc.spec.clusterIP !== 'None' && (svc.spec.ports ?? []).length;
}

/** Redraws the packet walk for the current state of the session. */
export function renderWalk(el, session, run) {
  const services = session.services().filter(walkable);
  // A Service that just appeared is the one to follow.
  const added = services.filter((s) => !state.known.has(s.metadata.name) && s.metadata.name !== 'kubernetes');
  state.known = new Set(services.map((s) => s.metadata.name));
  if (added.length) {
    state.service = added.at(-1).metadata.name;
    state.last = null;
  }
  if (!services.some((s) => s.metadata.name === state.service)) {
    const mine = services.filter((s) => s.metadata.name !== 'kubernetes');
    state.service = (mine.at(-1) ?? services[0])?.metadata.name ?? null;
    state.last = null;
  }
  const svc = services.find((s) => s.metadata.name === state.service);
  if (!svc) {
    el.innerHTML = `<p class="explain">Create a Service to follow a packet to it.</p>`;
    return;
  }
  const ports = svc.spec.ports;
  if (!ports.some((p) => p.port === state.port)) state.port = ports[0].port;
  const port = ports.find((p) => p.port === state.port);
  const ip = svc.spec.clusterIP;
  const table = session.cluster.ipvsTable(session.node);
  const vs = virtualServer(table, ip, port.port, port.protocol ?? 'TCP');
  const reals = Object.entries(vs?.realServers ?? {}).filter(([, r]) => r.weight > 0).map(([addr]) => addr);

  // Every endpoint of the Service, ready or not, from its EndpointSlices.
  const pods = new Map(session.pods().map((p) => [p.status?.podIPs?.[0]?.ip ?? p.status?.podIP, p]));
  const endpoints = [];
  for (const sl of session.slices()) {
    if (sl.metadata.labels?.['kubernetes.io/service-name'] !== svc.metadata.name) continue;
    for (const e of sl.endpoints ?? []) {
      for (const a of e.addresses ?? []) {
        endpoints.push({ ip: a, ready: e.conditions?.ready !== false, pod: e.targetRef?.name ?? pods.get(a)?.metadata.name ?? null });
      }
    }
  }
  const chosen = state.last && state.last.key === `${svc.metadata.name}:${port.port}` ? state.last.real : null;

  const backendHtml = endpoints.map((e) => {
    const inIpvs = reals.some((r) => splitHostPort(r).ip === e.ip);
    const real = reals.find((r) => splitHostPort(r).ip === e.ip);
    const cls = ['backend', e.ready ? '' : 'unready', chosen && real === chosen ? 'chosen' : ''].join(' ');
    const acts = e.pod && pods.has(e.ip)
      ? `<div class="acts">
          <button type="button" data-cmd="${esc(`simulate ${e.ready ? 'unready' : 'ready'} ${e.pod}`)}">${e.ready ? 'Make unready' : 'Make ready'}</button>
          <button type="button" data-cmd="${esc(`kubectl delete pod ${e.pod}`)}">Delete</button></div>`
      : '';
    return `<div class="${cls}" data-backend="${esc(e.ip)}">
      <div><b class="mono">${esc(e.pod ?? 'endpoint')}</b></div>
      <div class="addr mono">${esc(real ?? e.ip)}</div>
      <div>${e.ready ? '<span class="tag ready">ready</span>' : '<span class="tag unready">not ready</span>'} ${inIpvs ? '<span class="tag">real server</span>' : '<span class="tag">not in IPVS</span>'}</div>${acts}</div>`;
  }).join('') || '<p class="empty">No endpoints: no ready pod matches the selector.</p>';

  el.innerHTML = `
    <p class="explain">Follow one connection. The client sends to the ClusterIP, an address no pod has. On the node, IPVS matches the virtual server for that address and port, picks a real server (round robin) and rewrites the destination to the pod's address (DNAT). The reply comes back through the same connection entry, and its source is rewritten back to the ClusterIP, so the client only ever sees the Service.</p>
    <div class="walk-controls">
      <label for="walk-service">Service</label>
      <select id="walk-service">${services.map((s) => `<option ${s === svc ? 'selected' : ''}>${esc(s.metadata.name)}</option>`).join('')}</select>
      ${ports.length > 1 ? `<label for="walk-port">Port</label><select id="walk-port">${ports.map((p) => `<option value="${p.port}" ${p === port ? 'selected' : ''}>${p.port}/${p.protocol ?? 'TCP'}</option>`).join('')}</select>` : ''}
      <button type="button" id="walk-send" class="primary">Send a request</button>
      <span class="hint">${reals.length} real server${reals.length === 1 ? '' : 's'} behind ${esc(hostPort(ip, port.port))}</span>
    </div>
    <div class="walk-stage" id="walk-stage">
      <div class="box" id="walk-client"><h4>Client pod</h4><div class="addr mono">${esc(CLIENT.ip)}</div><div class="hint">on ${esc(session.node)}, connects to <span class="mono">${esc(svc.metadata.name)}</span></div></div>
      <div class="box node" id="walk-node"><h4>${esc(session.node)}: IPVS</h4><div class="addr mono">${esc(vs ? vs.key : `${port.protocol ?? 'TCP'}/${hostPort(ip, port.port)}`)}</div><div class="hint">scheduler ${esc(vs?.scheduler ?? 'rr')}, on kube-ipvs0</div></div>
      <div class="backends" id="walk-backends">${backendHtml}</div>
      <div class="packet" id="walk-packet" hidden></div>
    </div>
    <ol class="hops" id="walk-hops" aria-live="polite">${hopsHtml(svc, port, reals, chosen, session.node)}</ol>`;

  el.querySelector('#walk-service').addEventListener('change', (ev) => {
    state.service = ev.target.value;
    state.last = null;
    renderWalk(el, session, run);
    el.querySelector('#walk-service').focus();
  });
  el.querySelector('#walk-port')?.addEventListener('change', (ev) => {
    state.port = Number(ev.target.value);
    state.last = null;
    renderWalk(el, session, run);
    el.querySelector('#walk-port').focus();
  });
  el.querySelector('#walk-send').addEventListener('click', () => {
    const key = `${svc.metadata.name}:${port.port}`;
    const turn = state.turn.get(key) ?? 0;
    state.turn.set(key, turn + 1);
    state.last = { key, real: reals.length ? reals[turn % reals.length] : null };
    renderWalk(el, session, run);
    el.querySelector('#walk-send').focus();
    animate(el, state.last.real);
  });
  for (const b of el.querySelectorAll('[data-cmd]')) b.addEventListener('click', () => run(b.dataset.cmd));
}

function hdr(src, dst, changed) {
  const s = changed === 'src' ? `<span class="rewritten">${esc(src)}</span>` : esc(src);
  const d = changed === 'dst' ? `<span class="rewritten">${esc(dst)}</span>` : esc(dst);
  return `<span class="hdr">src ${s} → dst ${d}</span>`;
}

function hopsHtml(svc, port, reals, chosen, node) {
  const vip = hostPort(svc.spec.clusterIP, port.port);
  const client = hostPort(CLIENT.ip, CLIENT.port);
  const li = (i, text) => `<li data-hop="${i}">${text}</li>`;
  if (!chosen && reals.length === 0) {
    return [
      li(0, `Client pod sends a SYN: ${hdr(client, vip)}. It found the address through DNS (<span class="mono">${esc(svc.metadata.name)}.default.svc.cluster.local</span>).`),
      li(1, `IPVS on ${esc(node)} matches virtual server <span class="mono">${esc(vip)}</span>, but it has <b>no real servers</b>: no ready pod matches the Service. The packet goes nowhere and the connection fails.`),
    ].join('');
  }
  if (!chosen) {
    return `<li class="empty">Press “Send a request” to follow a connection. ${reals.length} pod${reals.length === 1 ? '' : 's'} can answer; IPVS takes them in turn.</li>`;
  }
  const pod = chosen;
  return [
    li(0, `Client pod sends a SYN: ${hdr(client, vip)}. No pod owns ${esc(svc.spec.clusterIP)}; it exists only in the IPVS table.`),
    li(1, `IPVS on ${esc(node)} matches virtual server <span class="mono">${esc(vip)}</span>, picks real server <span class="mono">${esc(pod)}</span> (rr, one of ${reals.length}) and rewrites the destination (DNAT, “Masq”): ${hdr(client, pod, 'dst')}. conntrack remembers the pair.`),
    li(2, `The pod receives it and answers: ${hdr(pod, client)}.`),
    li(3, `On the way back the connection entry reverses the rewrite, so the source becomes the ClusterIP again: ${hdr(vip, client, 'src')}.`),
    li(4, `The client gets its reply from ${esc(vip)}: it never learns which pod answered.`),
  ].join('');
}

function center(stage, el) {
  const s = stage.getBoundingClientRect();
  const r = el.getBoundingClientRect();
  // On the box's top edge, so the dot never hides an address.
  return { left: r.left - s.left + r.width / 2 - 7, top: r.top - s.top - 7 };
}

function animate(el, real) {
  const stage = el.querySelector('#walk-stage');
  const packet = el.querySelector('#walk-packet');
  const hops = [...el.querySelectorAll('#walk-hops li[data-hop]')];
  const client = el.querySelector('#walk-client');
  const node = el.querySelector('#walk-node');
  const backend = real ? el.querySelector(`.backend.chosen`) : null;
  const path = backend ? [client, node, backend, node, client] : [client, node];
  clearTimeout(state.timer);
  const reduced = window.matchMedia('(prefers-reduced-motion: reduce)').matches;
  packet.hidden = false;
  let i = 0;
  const step = () => {
    hops.forEach((h, j) => h.classList.toggle('current', j === i));
    [client, node, backend].forEach((b) => b?.classList.toggle('active', b === path[i]));
    const p = center(stage, path[i]);
    packet.style.left = `${p.left}px`;
    packet.style.top = `${p.top}px`;
    i++;
    if (i < path.length) state.timer = setTimeout(step, reduced ? 400 : 900);
    else state.timer = setTimeout(() => { packet.hidden = true; }, 1200);
  };
  step();
}
