// The Services, EndpointSlices, IPVS and DNS views: what the core computed,
// laid out with a short explanation beside each.

import { esc } from './format.js';
import { Session } from './session.js';
import { bandOf } from './rangemap.js';

function ports(svc) {
  return (svc.spec.ports ?? [])
    .map((p) => `${p.port}${p.nodePort ? `:${p.nodePort}` : ''}/${p.protocol ?? 'TCP'}${p.targetPort != null && p.targetPort !== p.port ? ` → ${p.targetPort}` : ''}`)
    .join(', ') || '<none>';
}

function selector(svc) {
  const s = Object.entries(svc.spec.selector ?? {});
  return s.length ? s.map(([k, v]) => `${k}=${v}`).join(',') : null;
}

/** Ready endpoints of a Service, counted from its EndpointSlices. */
function readyCount(slices, name) {
  let ready = 0;
  let total = 0;
  for (const sl of slices) {
    if (sl.metadata.labels?.['kubernetes.io/service-name'] !== name) continue;
    for (const e of sl.endpoints ?? []) {
      total++;
      if (e.conditions?.ready !== false) ready++;
    }
  }
  return { ready, total };
}

export function renderServices(el, session, usage) {
  const services = session.services();
  const slices = session.slices();
  const rows = services.map((svc) => {
    const ips = svc.spec.clusterIPs?.length ? svc.spec.clusterIPs : [svc.spec.clusterIP].filter(Boolean);
    const ipCells = ips.map((ip) => {
      if (ip === 'None') return '<span class="tag">None (headless)</span>';
      const band = bandOf(usage, ip);
      const tag = svc.metadata.name === 'kubernetes' ? '<span class="tag k8s">first address</span>' : band ? `<span class="tag ${band}">${band} band</span>` : '';
      return `<span class="mono cluster-ip" data-ip="${esc(ip)}">${esc(ip)}</span> ${tag}`;
    }).join('<br>') || '<span class="empty">none</span>';
    const sel = selector(svc);
    const { ready, total } = readyCount(slices, svc.metadata.name);
    const ep = total === 0
      ? (sel ? '<span class="tag">no matching ready pods</span>' : '<span class="tag">no selector: slices by hand</span>')
      : `<span class="tag ${ready ? 'ready' : 'unready'}">${ready}/${total} ready</span>`;
    return `<tr data-service="${esc(svc.metadata.name)}">
      <td class="mono">${esc(svc.metadata.name)}</td>
      <td>${esc(svc.spec.type ?? 'ClusterIP')}</td>
      <td>${ipCells}</td>
      <td class="mono">${esc(ports(svc))}</td>
      <td class="mono">${sel ? esc(sel) : '<span class="empty">none</span>'}</td>
      <td>${ep}</td></tr>`;
  });
  el.innerHTML = `
    <p class="explain">A Service is a stable virtual address (the <b>ClusterIP</b>) in front of a changing set of pods. The API server picks the address from the service CIDR when the Service is created and keeps it for the Service's lifetime; the <b>selector</b> says which pods are behind it.</p>
    <table class="grid" aria-label="Services">
      <thead><tr><th scope="col">Name</th><th scope="col">Type</th><th scope="col">ClusterIP</th><th scope="col">Ports</th><th scope="col">Selector</th><th scope="col">Endpoints</th></tr></thead>
      <tbody>${rows.join('')}</tbody>
    </table>
    <h3>kubectl get svc</h3>
    <pre class="block" aria-label="kubectl get svc output">${esc(session.cluster.kubectl('kubectl get svc').text)}</pre>`;
  return services.length;
}

export function renderSlices(el, session) {
  const slices = session.slices();
  const blocks = slices.map((sl) => {
    const svc = sl.metadata.labels?.['kubernetes.io/service-name'] ?? '(no Service)';
    const manager = sl.metadata.labels?.['endpointslice.kubernetes.io/managed-by'];
    const managed = manager ? `Managed by ${manager}` : sl.metadata.name === 'kubernetes' ? 'Written by the API server: its own addresses' : 'Written by hand (no managed-by label): the controller leaves it alone';
    const ports = (sl.ports ?? []).map((p) => `${p.name ? `${p.name} ` : ''}${p.port ?? '?'}/${p.protocol ?? 'TCP'}`).join(', ') || '<none>';
    const eps = (sl.endpoints ?? []).map((e) => {
      const c = e.conditions ?? {};
      const ready = c.ready !== false;
      const state = `${ready ? '<span class="tag ready">ready</span>' : '<span class="tag unready">not ready</span>'}${c.terminating ? ' <span class="tag">terminating</span>' : ''}`;
      return `<tr><td class="mono">${esc((e.addresses ?? []).join(', '))}</td><td>${state}</td><td class="mono">${esc(e.targetRef ? `${e.targetRef.kind.toLowerCase()}/${e.targetRef.name}` : '—')}</td><td class="mono">${esc(e.nodeName ?? '—')}</td></tr>`;
    }).join('') || '<tr><td colspan="4" class="empty">no endpoints</td></tr>';
    return `<section class="slice" data-slice="${esc(sl.metadata.name)}">
      <h3><span class="mono">${esc(sl.metadata.name)}</span> <span class="tag">Service ${esc(svc)}</span> <span class="tag">${esc(sl.addressType)}</span> <span class="tag">ports ${esc(ports)}</span></h3>
      <p class="hint">${esc(managed)}</p>
      <table class="grid"><thead><tr><th scope="col">Address</th><th scope="col">Conditions</th><th scope="col">Pod</th><th scope="col">Node</th></tr></thead><tbody>${eps}</tbody></table>
    </section>`;
  });
  el.innerHTML = `
    <p class="explain">The <b>EndpointSlice controller</b> watches pods and Services. Every pod whose labels match a Service's selector becomes an endpoint in that Service's slice, marked ready or not. A Service <em>without</em> a selector gets no slice: you write one yourself, labelled <code>kubernetes.io/service-name</code>, to point the Service anywhere (an external database, say).</p>
    ${blocks.join('') || '<p class="empty">No EndpointSlices yet.</p>'}
    <h3>Endpoints and EndpointSlices, side by side</h3>
    <p class="explain"><code>v1/Endpoints</code> is the legacy object the slices replace, still written for every Service with a selector: one object per Service, only its primary IP family, and at most <b>1,000 addresses</b> (past that kube-controller-manager truncates it and marks it <code>endpoints.kubernetes.io/over-capacity: truncated</code>). Since Kubernetes 1.33 the API server <b>warns</b> on every use of it, as <code>kubectl get endpoints</code> shows. Slices hold up to 100 endpoints each, as many slices as a Service needs, one set per family. <b>Mirroring goes one way</b>: an Endpoints object you write for a Service without a selector is copied into slices; a slice you write gets no Endpoints object.</p>
    <div class="side-by-side">
      <section aria-label="kubectl get endpoints"><h4>kubectl get endpoints</h4><pre class="block">${esc(session.cluster.kubectl('kubectl get endpoints').text)}</pre></section>
      <section aria-label="kubectl get endpointslices"><h4>kubectl get endpointslices</h4><pre class="block">${esc(session.cluster.kubectl('kubectl get endpointslices').text)}</pre></section>
    </div>`;
  return slices.length;
}

/** svcnet's table as the core lays it out, the picked Service's set
 * elements marked and each rule followed by what it is for. */
function svcnetTable(session, service) {
  return session.cluster.nftView(service).map((l) => {
    const line = `<span class="nft-line${l.highlight ? ' mine' : ''}">${esc(l.text)}</span>`;
    return l.purpose ? `${line}\n<span class="nft-why">${esc(l.text.match(/^\s*/)[0])}# ${esc(l.purpose)}</span>` : line;
  }).join('\n');
}

export function renderIpvs(el, session, mode, nftService) {
  const table = session.cluster.ipvsTable(session.node);
  const addrs = table.addresses ?? [];
  // What the node's dataplane holds in each mode, from the core's console.
  const shown = {
    list: { line: 'ipvsadm -Ln', where: `IPVS mode: every ClusterIP is bound on the dummy interface <code>kube-ipvs0</code>, so an interface does hold it.` },
    save: { line: 'ipvsadm-save -n', where: `IPVS mode: every ClusterIP is bound on the dummy interface <code>kube-ipvs0</code>, so an interface does hold it.` },
    iptables: { line: 'iptables-save', where: 'iptables mode: <b>no interface holds the ClusterIP</b>; it exists only in the nat rules below.' },
    nft: { line: 'nft list ruleset', where: 'nftables mode: <b>no interface holds the ClusterIP</b>; it exists only in the <code>service-ips</code> map and the rules below.' },
    svcnet: { line: 'nft list table inet svcnet', where: 'svcnet\'s nftables table beside IPVS mode: the ClusterIPs stay on <code>kube-ipvs0</code>; these sets and chains add masquerading and filtering.' },
  }[mode] ?? null;
  const view = shown ?? { line: 'ipvsadm -Ln', where: '' };
  const services = session.cluster.get('services').map((s) => `${s.metadata.namespace}/${s.metadata.name}`);
  const yours = services.filter((k) => k.startsWith('default/') && k !== 'default/kubernetes');
  const picked = services.includes(nftService) ? nftService : (yours.at(-1) ?? services[0]);
  const body = mode === 'svcnet' ? svcnetTable(session, picked) : esc(session.cluster.kubectl(view.line).text);
  const chooser = mode !== 'svcnet' ? '' : `<p class="hint"><label for="nft-service">Highlight the set elements of</label> <select id="nft-service">${services.map((k) => `<option value="${esc(k)}" ${k === picked ? 'selected' : ''}>${esc(k)}</option>`).join('')}</select>; under each rule, what it is for.</p>`;
  const radio = (value, label) => `<label><input type="radio" name="ipvs-mode" value="${value}" ${(shown ? mode : 'list') === value ? 'checked' : ''}> <code>${label}</code></label>`;
  el.innerHTML = `
    <p class="explain">What kube-proxy programs on <code>${esc(session.node)}</code>. In <b>IPVS mode</b> (this node's) each ClusterIP is bound to the dummy interface <code>kube-ipvs0</code>, and each ClusterIP:port is an IPVS <b>virtual server</b> whose <b>real servers</b> are the ready endpoints; <code>Masq</code> means NAT. In <b>iptables mode</b> the same Services become NAT rules instead, and in <b>nftables mode</b> nftables maps and chains. Pick what to see:</p>
    <div class="walk-controls" role="radiogroup" aria-label="Mode and format">
      ${radio('list', 'ipvsadm -Ln')}${radio('save', 'ipvsadm-save -n')}${radio('iptables', 'iptables-save')}${radio('nft', 'nft list ruleset')}${radio('svcnet', 'nft list table inet svcnet')}
    </div>
    <p class="hint" id="ipvs-where">${view.where}</p>${chooser}
    <pre class="block" id="ipvs-text" aria-label="${esc(view.line)}">${body}</pre>
    <h3>Addresses on kube-ipvs0 (IPVS mode)</h3>
    <p class="mono" id="ipvs-addresses">${addrs.map(esc).join('  ') || '<span class="empty">none</span>'}</p>`;
  return Object.keys(table.virtualServers ?? {}).length;
}

export function renderDns(el, session) {
  const records = session.cluster.dnsRecords();
  const rows = records.map((r) => {
    const data = typeof r.data === 'object' ? `${r.data.priority} ${r.data.weight} ${r.data.port} ${r.data.target}` : r.data;
    return `<tr><td class="mono">${esc(r.name)}</td><td>${esc(r.type)}</td><td class="mono">${esc(data)}</td><td>${esc(r.ttl)}</td></tr>`;
  });
  el.innerHTML = `
    <p class="explain">What the cluster DNS (CoreDNS) answers, per the Kubernetes DNS specification: <code>&lt;service&gt;.&lt;namespace&gt;.svc.cluster.local</code> resolves to the ClusterIP (a headless Service resolves to its ready pods instead), each named port gets an SRV record, and every ClusterIP has a reverse (PTR) name. Pods find Services by these names, never by address.</p>
    <table class="grid dns-records" aria-label="DNS records"><thead><tr><th scope="col">Name</th><th scope="col">Type</th><th scope="col">Data</th><th scope="col">TTL</th></tr></thead><tbody>${rows.join('')}</tbody></table>`;
  return records.length;
}

/** Milliseconds on the cluster's clock as `m:ss.mmm` since it started. */
function clock(ms) {
  const m = Math.floor(ms / 60000);
  const sec = ((ms % 60000) / 1000).toFixed(3).padStart(6, '0');
  return `${m}:${sec}`;
}

export function renderKubeProxy(el, session) {
  const k = session.cluster.kubeProxy();
  if (!k) {
    el.innerHTML = '<p class="empty">No kube-proxy on this cluster.</p>';
    return 0;
  }
  const events = [...k.events].reverse().slice(0, 40).map((e) => `<tr><td class="mono">${clock(e.at)}</td><td><span class="tag">${esc(e.type)}</span></td><td>${esc(e.kind)}</td><td class="mono">${esc(e.object)}</td><td class="mono">${esc(e.resourceVersion)}</td></tr>`).join('');
  const syncs = [...k.syncs].reverse().slice(0, 20).map((r) => `<tr><td class="mono">${clock(r.at)}</td><td>${r.full ? 'full' : 'partial'}${r.count > 1 ? ` ×${r.count}` : ''}</td><td>${r.events}</td><td>${r.operations}</td></tr>`).join('');
  const cache = k.cache.map((c) => `<tr><td>${esc(c.kind)}</td><td class="mono">${esc(c.object)}</td><td class="mono">${esc(c.resourceVersion)}</td></tr>`).join('');
  const next = k.nextSyncAt == null ? '' : ` The next sync is due at <span class="mono">${clock(k.nextSyncAt)}</span>${k.pendingEvents ? `, with <b>${k.pendingEvents}</b> event(s) waiting for it` : ''}.`;
  el.innerHTML = `
    <p class="explain">kube-proxy on <code>${esc(k.node)}</code> does not ask the API server what to program: it <b>lists</b> Services and EndpointSlices once, then <b>watches</b> them, and each change arrives as an event (ADDED, MODIFIED, DELETED) with the object's resourceVersion. It keeps what it saw in a local <b>cache</b> and programs IPVS from that cache in its <b>sync loop</b>: at most one sync per <code>--min-sync-period</code> (${k.minSyncPeriodMs / 1000} s), so changes closer together are <b>coalesced</b> into one sync, and a full resync every <code>--sync-period</code> (${k.syncPeriodMs / 1000} s). The clock is the cluster's (now <span class="mono">${clock(k.now)}</span>).${next}</p>
    <h3>Sync loop</h3>
    <table class="grid" aria-label="Syncs"><thead><tr><th scope="col">At</th><th scope="col">Sync</th><th scope="col">Events taken in</th><th scope="col">IPVS operations</th></tr></thead><tbody>${syncs || '<tr><td colspan="4" class="empty">No sync yet.</td></tr>'}</tbody></table>
    <h3>Watch events, newest first</h3>
    <table class="grid" aria-label="Watch events"><thead><tr><th scope="col">At</th><th scope="col">Type</th><th scope="col">Kind</th><th scope="col">Object</th><th scope="col">resourceVersion</th></tr></thead><tbody>${events}</tbody></table>
    <h3>Cache (${k.cache.length} objects)</h3>
    <table class="grid" aria-label="kube-proxy cache"><thead><tr><th scope="col">Kind</th><th scope="col">Object</th><th scope="col">resourceVersion</th></tr></thead><tbody>${cache}</tbody></table>`;
  return k.pendingEvents;
}

export { Session };
