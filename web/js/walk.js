// The packet walk: one connection to a Service port, hop by hop, as the
// core computes it (`cluster.walk`): the endpoints, the real server IPVS
// picks in turn, each hop's addresses, and the masquerade rule of svcnet's
// table where it rewrites the source. This module keeps only what the
// page needs to draw: which Service, port and client are shown, and how
// many requests were sent to each (IPVS's turn).

import { esc } from './format.js';

const state = { service: null, port: null, client: 'pod', turn: new Map(), sent: null, walk: null, timer: null, known: new Set() };

const CLIENTS = { pod: 'a pod on the node', endpoint: 'an endpoint pod itself (hairpin)', outside: 'a host outside the cluster (NodePort)' };

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
    state.sent = null;
  }
  if (!services.some((s) => s.metadata.name === state.service)) {
    const mine = services.filter((s) => s.metadata.name !== 'kubernetes');
    state.service = (mine.at(-1) ?? services[0])?.metadata.name ?? null;
    state.sent = null;
  }
  const svc = services.find((s) => s.metadata.name === state.service);
  if (!svc) {
    el.innerHTML = `<p class="explain">Create a Service to follow a packet to it.</p>`;
    return;
  }
  const key = `default/${svc.metadata.name}`;
  const turnKey = () => `${key}:${state.port}:${state.client}`;
  const sent = state.sent === turnKey() ? state.turn.get(turnKey()) - 1 : undefined;
  const w = session.cluster.walk(key, state.port ?? undefined, state.client, sent);
  state.port = w.port.port;
  state.walk = w;
  const chosen = w.chosen ?? null;

  const backendHtml = w.endpoints.map((e) => {
    const cls = ['backend', e.ready ? '' : 'unready', chosen && e.realServer === chosen ? 'chosen' : ''].join(' ');
    const acts = e.pod
      ? `<div class="acts">
          <button type="button" data-cmd="${esc(`simulate ${e.ready ? 'unready' : 'ready'} ${e.pod}`)}">${e.ready ? 'Make unready' : 'Make ready'}</button>
          <button type="button" data-cmd="${esc(`kubectl delete pod ${e.pod}`)}">Delete</button></div>`
      : '';
    return `<div class="${cls}" data-backend="${esc(e.ip)}">
      <div><b class="mono">${esc(e.pod ?? 'endpoint')}</b></div>
      <div class="addr mono">${esc(e.realServer ?? e.ip)}</div>
      <div>${e.ready ? '<span class="tag ready">ready</span>' : '<span class="tag unready">not ready</span>'} ${e.realServer ? '<span class="tag">real server</span>' : '<span class="tag">not in IPVS</span>'}</div>${acts}</div>`;
  }).join('') || '<p class="empty">No endpoints: no ready pod matches the selector.</p>';

  const ports = w.ports;
  const client = w.client;
  el.innerHTML = `
    <p class="explain">Follow one connection. The client sends to the Service's address; on the node, IPVS matches the virtual server for that address and port, picks a real server (round robin) and rewrites the destination to the pod's address (DNAT). When the client is outside the cluster or is the chosen pod itself, svcnet's nftables table also rewrites the source (masquerade), so that the reply comes back through the node. The reply comes back through the same connection entry, and conntrack undoes every rewrite, so the client only ever sees the Service.</p>
    <div class="walk-controls">
      <label for="walk-service">Service</label>
      <select id="walk-service">${services.map((s) => `<option ${s === svc ? 'selected' : ''}>${esc(s.metadata.name)}</option>`).join('')}</select>
      ${ports.length > 1 ? `<label for="walk-port">Port</label><select id="walk-port">${ports.map((p) => `<option value="${p.port}" ${p.port === w.port.port ? 'selected' : ''}>${p.port}/${p.protocol}</option>`).join('')}</select>` : ''}
      <label for="walk-client-kind">From</label>
      <select id="walk-client-kind">${Object.entries(CLIENTS).map(([k, label]) => `<option value="${k}" ${k === state.client ? 'selected' : ''}>${label}</option>`).join('')}</select>
      <button type="button" id="walk-send" class="primary" ${client ? '' : 'disabled'}>Send a request</button>
      <span class="hint">${w.realServers} real server${w.realServers === 1 ? '' : 's'} behind ${esc(w.frontend)}</span>
    </div>
    <div class="walk-stage" id="walk-stage">
      <div class="box" id="walk-client"><h4>${client?.kind === 'outside' ? 'Outside host' : 'Client pod'}</h4><div class="addr mono">${esc(client?.address ?? '-')}</div><div class="hint">${client ? `${esc(client.name)}, connects to <span class="mono">${esc(w.frontend)}</span>` : esc(w.unreachable ?? '')}</div></div>
      <div class="box node" id="walk-node"><h4>${esc(w.node)}: IPVS</h4><div class="addr mono">${esc(w.virtualServer)}</div><div class="hint">scheduler ${esc(w.scheduler)}, on kube-ipvs0</div></div>
      <div class="backends" id="walk-backends">${backendHtml}</div>
      <div class="packet" id="walk-packet" hidden></div>
    </div>
    <ol class="hops" id="walk-hops" aria-live="polite">${hopsHtml(w, svc)}</ol>`;

  const redraw = (focus) => { renderWalk(el, session, run); el.querySelector(focus)?.focus(); };
  el.querySelector('#walk-service').addEventListener('change', (ev) => { state.service = ev.target.value; state.port = null; state.sent = null; redraw('#walk-service'); });
  el.querySelector('#walk-port')?.addEventListener('change', (ev) => { state.port = Number(ev.target.value); state.sent = null; redraw('#walk-port'); });
  el.querySelector('#walk-client-kind').addEventListener('change', (ev) => { state.client = ev.target.value; state.sent = null; redraw('#walk-client-kind'); });
  el.querySelector('#walk-send').addEventListener('click', () => {
    state.turn.set(turnKey(), (state.turn.get(turnKey()) ?? 0) + 1);
    state.sent = turnKey();
    redraw('#walk-send');
    animate(el, state.walk);
  });
  for (const b of el.querySelectorAll('[data-cmd]')) b.addEventListener('click', () => run(b.dataset.cmd));
}

function hdr(src, dst, changed) {
  const mark = (text, on) => (on ? `<span class="rewritten">${esc(text)}</span>` : esc(text));
  const s = mark(src, changed === 'src' || changed === 'both');
  const d = mark(dst, changed === 'dst' || changed === 'both');
  return `<span class="hdr">src ${s} → dst ${d}</span>`;
}

/** The story of each hop the core computed, in words. */
function hopsHtml(w, svc) {
  if (!w.client) return `<li class="empty">${esc(w.unreachable ?? '')}</li>`;
  if (!w.hops.length) {
    return `<li class="empty">Press “Send a request” to follow a connection. ${w.realServers} pod${w.realServers === 1 ? '' : 's'} can answer; IPVS takes them in turn.</li>`;
  }
  const name = `${svc.metadata.name}.default.svc.cluster.local`;
  const story = {
    send: (h) => `${w.client.kind === 'outside' ? 'The outside host' : 'The client pod'} sends a SYN: ${hdr(h.src, h.dst)}. ${w.client.kind === 'outside' ? 'It dials the node\'s address and the NodePort.' : `It found the address through DNS (<span class="mono">${esc(name)}</span>); no pod owns it, it exists only in the IPVS table.`}`,
    dropped: () => `IPVS on ${esc(w.node)} matches virtual server <span class="mono">${esc(w.virtualServer)}</span>, but it has <b>no real servers</b>: no ready pod matches the Service. The packet goes nowhere and the connection fails.`,
    dnat: (h) => `IPVS on ${esc(w.node)} matches virtual server <span class="mono">${esc(w.virtualServer)}</span>, picks real server <span class="mono">${esc(w.chosen)}</span> (${esc(w.scheduler)}, one of ${w.realServers}) and rewrites the destination (DNAT, “Masq”): ${hdr(h.src, h.dst, h.rewritten)}. conntrack remembers the pair.`,
    masquerade: (h) => `svcnet's nftables table <b>masquerades</b> on the way out (nat-postrouting): the source becomes the node's own address on the pod network, ${hdr(h.src, h.dst, h.rewritten)}, so the pod's reply comes back through the node to be un-NATed. ${w.client.kind === 'endpoint' ? 'IPVS picked the client itself: without this its reply would go straight to itself and never match.' : 'The endpoint could be on any node: without this the reply would go to the outside host directly, from the wrong address.'} The rule: <span class="mono">${esc(h.rule)}</span>.`,
    deliver: (h) => `The pod receives it: ${hdr(h.src, h.dst)}.`,
    reply: (h) => `The pod answers: ${hdr(h.src, h.dst)}.`,
    reverse: (h) => `On the way back the connection entry reverses ${h.rewritten === 'both' ? 'both rewrites' : 'the rewrite'}, so the source becomes ${esc(w.frontend)} again: ${hdr(h.src, h.dst, h.rewritten === 'both' ? 'both' : 'src')}.`,
    receive: () => `The client gets its reply from ${esc(w.frontend)}: it never learns which pod answered.`,
  };
  return w.hops.map((h, i) => `<li data-hop="${i}" data-kind="${esc(h.kind)}">${story[h.kind](h)}</li>`).join('');
}

function center(stage, el) {
  const s = stage.getBoundingClientRect();
  const r = el.getBoundingClientRect();
  // On the box's top edge, so the dot never hides an address.
  return { left: r.left - s.left + r.width / 2 - 7, top: r.top - s.top - 7 };
}

/** Moves the packet along the walk's hops, one box per hop. */
function animate(el, walk) {
  const stage = el.querySelector('#walk-stage');
  const packet = el.querySelector('#walk-packet');
  const hops = [...el.querySelectorAll('#walk-hops li[data-hop]')];
  const boxes = { client: el.querySelector('#walk-client'), node: el.querySelector('#walk-node'), pod: el.querySelector('.backend.chosen') };
  const path = walk.hops.map((h) => boxes[h.place]).filter(Boolean);
  clearTimeout(state.timer);
  if (!path.length) return;
  const reduced = window.matchMedia('(prefers-reduced-motion: reduce)').matches;
  packet.hidden = false;
  let i = 0;
  const step = () => {
    hops.forEach((h, j) => h.classList.toggle('current', j === i));
    Object.values(boxes).forEach((b) => b?.classList.toggle('active', b === path[i]));
    const p = center(stage, path[i]);
    packet.style.left = `${p.left}px`;
    packet.style.top = `${p.top}px`;
    i++;
    if (i < path.length) state.timer = setTimeout(step, reduced ? 400 : 900);
    else state.timer = setTimeout(() => { packet.hidden = true; }, 1200);
  };
  step();
}
