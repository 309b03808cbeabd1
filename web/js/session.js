// One playground session: the core's Cluster (wasm), the command history
// that rebuilds it, and what kubectl's client and the missing controllers
// would add around the API server.
//
// The core (through the wasm package) decides everything Kubernetes
// decides: ClusterIPs and NodePorts, validation and its error messages,
// EndpointSlices and Endpoints, the IPVS table, DNS. This file only:
//   - turns kubectl commands into manifests, as kubectl's client does;
//   - plays the Deployment/ReplicaSet controllers (the core has no
//     Deployments): a Deployment is a name, an image and a replica count
//     here, and its Pods are real Pod objects applied to the core;
//   - plays the node's IPAM (the core allocates no Pod IPs): Pods get
//     addresses from node-1's pod CIDR in order, like the host-local CNI
//     plugin, skipping addresses in use;
//   - prints results the way kubectl prints them.

import { parse, UsageError, HELP } from './kubectl.js';
import { table, addColumn, keepRows, toYaml, toJson, ipToBig, bigToIp, parseCidr } from './format.js';

/** The one node of the playground cluster. */
export const NODE = { name: 'node-1', ip: '192.168.49.2', podCidr: '10.244.0.0/24' };
/** The cluster's pod network (the service CIDR may not overlap it). */
export const POD_CIDR = '10.244.0.0/16';
/** The API server's address: the `kubernetes` Service's endpoint. */
export const APISERVER = '192.168.49.2:8443';

/** The Cluster options for a service CIDR and seed. */
export function clusterOptions(cidr, seed) {
  return { serviceClusterIpRange: cidr, seed, podCidrs: [POD_CIDR], nodeIps: [NODE.ip], apiservers: [APISERVER] };
}

const NODE_MANIFEST = JSON.stringify({
  apiVersion: 'v1',
  kind: 'Node',
  metadata: { name: NODE.name, labels: { 'kubernetes.io/hostname': NODE.name } },
  spec: { podCIDR: NODE.podCidr, podCIDRs: [NODE.podCidr] },
  status: { addresses: [{ type: 'InternalIP', address: NODE.ip }, { type: 'Hostname', address: NODE.name }] },
});

// Kubernetes' rand.SafeEncodeString alphabet (no vowels, no 0/1/3).
const ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';

/** A short deterministic name suffix, from FNV-1a of `text`. */
function suffix(text, length) {
  let h = 0x811c9dc5;
  for (const ch of text) {
    h ^= ch.charCodeAt(0);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  let out = '';
  for (let i = 0; i < length; i++) {
    out += ALPHABET[h % ALPHABET.length];
    h = Math.imul(h ^ (h >>> 13), 0x5bd1e995) >>> 0;
  }
  return out;
}

/** kubectl's prefix for errors the API server returns. */
export function serverError(result) {
  if (result.reason === 'Invalid') return result.text;
  return `Error from server (${result.reason ?? 'BadRequest'}): ${result.text}`;
}

export class Session {
  /**
   * Starts a cluster. Throws the core's message when the service CIDR is
   * refused (`--service-cluster-ip-range ...`).
   */
  constructor(Cluster, { cidr, seed = 0 }) {
    this.Cluster = Cluster;
    this.cidr = cidr;
    this.seed = seed;
    this.cluster = new Cluster(clusterOptions(cidr, seed));
    this.cluster.kubectlApply(NODE_MANIFEST);
    /** Commands run, `{ line, stdin? }`, enough to rebuild this state. */
    this.history = [];
    /** name → { name, image, port, replicas, hash, serial, pods: [pod names] } */
    this.deployments = new Map();
    this.ipamCursor = 0n;
    /** Bumped on every change, so views know when to redraw. */
    this.version = 0;
  }

  /** Runs one command line; `{ text, ok }` as the console prints it. */
  run(line, stdin = null) {
    let command;
    try {
      command = parse(line, stdin);
    } catch (e) {
      if (e instanceof UsageError) return { ok: false, text: `error: ${e.message}` };
      throw e;
    }
    if (!['noop', 'help', 'clear', 'apply-prompt'].includes(command.verb)) {
      this.history.push(stdin == null ? { line } : { line, stdin });
    }
    const result = this.execute(command);
    if (!['get', 'help', 'noop', 'clear', 'ipvsadm', 'apply-prompt'].includes(command.verb)) this.version++;
    return { ...result, command };
  }

  execute(c) {
    switch (c.verb) {
      case 'noop': return { ok: true, text: '' };
      case 'help': return { ok: true, text: HELP };
      case 'clear': return { ok: true, text: '' };
      case 'apply-prompt': return { ok: true, text: '' };
      case 'create-service': return this.createService(c);
      case 'create-deployment': return this.createDeployment(c);
      case 'expose': return this.expose(c);
      case 'apply': return this.apply(c.manifest);
      case 'delete': return this.delete(c);
      case 'scale': return this.scale(c);
      case 'get': return this.get(c);
      case 'ipvsadm': return { ok: true, text: c.save ? this.cluster.ipvsadmSave(NODE.name) : this.cluster.ipvsadmList(NODE.name) };
      case 'readiness': return this.readiness(c);
      default: return { ok: false, text: `error: unknown command` };
    }
  }

  // ---- reading -------------------------------------------------------

  services() { return this.cluster.get('services', 'default'); }
  pods() { return this.cluster.get('pods', 'default'); }
  slices() { return this.cluster.get('endpointslices', 'default'); }
  service(name) { return this.services().find((s) => s.metadata.name === name); }

  /** `1/1` style readiness of a Pod object, as the Ready condition says. */
  static ready(pod) {
    return (pod.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
  }

  static podIp(pod) {
    return pod.status?.podIPs?.[0]?.ip ?? pod.status?.podIP ?? '';
  }

  // ---- kubectl create / expose / apply -----------------------------------

  /** Applies one object made by this console; kubectl's line or the error. */
  applyOne(object, verb) {
    const [result] = this.cluster.kubectlApply(JSON.stringify(object));
    if (!result.ok) return { ok: false, text: serverError(result) };
    return { ok: true, text: verb ? result.text.replace(/ (created|configured|unchanged)$/, ` ${verb}`) : result.text };
  }

  alreadyExists(name) {
    return { ok: false, text: `Error from server (AlreadyExists): services "${name}" already exists` };
  }

  createService(c) {
    if (this.service(c.name)) return this.alreadyExists(c.name);
    const svc = {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: c.name, labels: { app: c.name } },
      spec: {
        type: c.type,
        selector: { app: c.name },
        ports: c.ports.map((p) => ({ name: `${p.port}-${p.targetPort}`, port: p.port, protocol: 'TCP', targetPort: p.targetPort })),
      },
    };
    if (c.clusterIP) svc.spec.clusterIP = c.clusterIP;
    if (c.nodePort != null && svc.spec.ports[0]) svc.spec.ports[0].nodePort = c.nodePort;
    return this.applyOne(svc);
  }

  expose(c) {
    const dep = this.deployments.get(c.deployment);
    if (!dep) return { ok: false, text: `Error from server (NotFound): deployments.apps "${c.deployment}" not found` };
    if (this.service(c.name)) return this.alreadyExists(c.name);
    const types = { clusterip: 'ClusterIP', nodeport: 'NodePort', loadbalancer: 'LoadBalancer' };
    const svc = {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: c.name, labels: { app: dep.name } },
      spec: {
        type: types[c.type.toLowerCase()] ?? c.type,
        selector: { app: dep.name },
        ports: [{ port: c.port, protocol: c.protocol, targetPort: c.targetPort }],
      },
    };
    return this.applyOne(svc, 'exposed');
  }

  apply(manifest) {
    const results = this.cluster.kubectlApply(manifest);
    return {
      ok: results.every((r) => r.ok),
      text: results.map((r) => (r.ok ? r.text : serverError(r))).join('\n'),
    };
  }

  // ---- Deployments: what the Deployment and ReplicaSet controllers do ----

  createDeployment(c) {
    if (this.deployments.has(c.name)) {
      return { ok: false, text: `Error from server (AlreadyExists): deployments.apps "${c.name}" already exists` };
    }
    const dep = { name: c.name, image: c.image, port: c.port, replicas: 0, hash: suffix(`${c.name}/${c.image}`, 10), serial: 0, pods: [] };
    const grown = this.grow(dep, c.replicas);
    if (!grown.ok) return grown;
    this.deployments.set(c.name, dep);
    return { ok: true, text: `deployment.apps/${c.name} created` };
  }

  /** Adds pods until `dep` has `replicas`; the first refusal stops it. */
  grow(dep, replicas) {
    while (dep.pods.length < replicas) {
      const r = this.addPod(dep);
      if (!r.ok) return r;
    }
    dep.replicas = replicas;
    return { ok: true };
  }

  addPod(dep) {
    const ip = this.allocatePodIp();
    if (!ip) return { ok: false, text: `error: failed to allocate a pod IP: no IP addresses available in range set ${NODE.podCidr} (node ${NODE.name})` };
    dep.serial++;
    const name = `${dep.name}-${dep.hash}-${suffix(`${dep.name}#${dep.serial}`, 5)}`;
    const container = { name: dep.image.split('/').pop().split(/[:@]/)[0], image: dep.image };
    if (dep.port) container.ports = [{ containerPort: dep.port, protocol: 'TCP' }];
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, labels: { app: dep.name, 'pod-template-hash': dep.hash } },
      spec: { nodeName: NODE.name, containers: [container] },
      status: { phase: 'Running', hostIP: NODE.ip, podIP: ip, podIPs: [{ ip }], conditions: [{ type: 'Ready', status: 'True' }] },
    };
    const r = this.applyOne(pod);
    if (r.ok) dep.pods.push(name);
    return r;
  }

  /** The next free address of node-1's pod CIDR after the last one given
   * (host-local IPAM's order); .1 is the bridge's, so it starts at .2, and
   * .254 is kept for the packet walk's client pod. */
  allocatePodIp() {
    const cidr = parseCidr(NODE.podCidr);
    const used = new Set(this.pods().map((p) => Session.podIp(p)));
    const first = 2n;
    const last = cidr.size - 3n;
    for (let i = 0n; i <= last - first; i++) {
      const offset = first + ((this.ipamCursor + i) % (last - first + 1n));
      const ip = bigToIp(cidr.base + offset, false);
      if (!used.has(ip)) {
        this.ipamCursor = offset - first + 1n;
        return ip;
      }
    }
    return null;
  }

  scale(c) {
    const dep = this.deployments.get(c.name);
    if (!dep) return { ok: false, text: `Error from server (NotFound): deployments.apps "${c.name}" not found` };
    if (c.replicas > dep.pods.length) {
      const r = this.grow(dep, c.replicas);
      if (!r.ok) return r;
    }
    // The ReplicaSet controller removes unready pods first, then the newest.
    const byPod = new Map(this.pods().map((p) => [p.metadata.name, p]));
    while (dep.pods.length > c.replicas) {
      const unready = dep.pods.filter((n) => byPod.get(n) && !Session.ready(byPod.get(n)));
      const victim = unready.at(-1) ?? dep.pods.at(-1);
      this.cluster.kubectlDelete('pod', 'default', victim);
      dep.pods = dep.pods.filter((n) => n !== victim);
    }
    dep.replicas = c.replicas;
    return { ok: true, text: `deployment.apps/${c.name} scaled` };
  }

  delete(c) {
    const lines = [];
    let ok = true;
    for (const name of c.names) {
      if (c.kind === 'deployments') {
        const dep = this.deployments.get(name);
        if (!dep) {
          ok = false;
          lines.push(`Error from server (NotFound): deployments.apps "${name}" not found`);
          continue;
        }
        for (const pod of dep.pods) this.cluster.kubectlDelete('pod', 'default', pod);
        this.deployments.delete(name);
        lines.push(`deployment.apps "${name}" deleted`);
        continue;
      }
      const kind = { services: 'service', pods: 'pod', endpointslices: 'endpointslice', nodes: 'node', servicecidrs: 'servicecidr' }[c.kind];
      if (!kind) {
        ok = false;
        lines.push(`error: this console does not delete ${c.kind}`);
        continue;
      }
      const r = this.cluster.kubectlDelete(kind, c.namespace, name);
      if (!r.ok) {
        ok = false;
        lines.push(serverError(r));
        continue;
      }
      lines.push(r.text);
      if (kind === 'pod') this.replacePod(name);
    }
    return { ok, text: lines.join('\n') };
  }

  /** A deleted pod of a Deployment: its ReplicaSet starts a new one. */
  replacePod(name) {
    for (const dep of this.deployments.values()) {
      if (dep.pods.includes(name)) {
        dep.pods = dep.pods.filter((n) => n !== name);
        this.addPod(dep);
      }
    }
  }

  /** The playground's stand-in for a readiness probe that fails or passes. */
  readiness(c) {
    const pod = this.pods().find((p) => p.metadata.name === c.pod);
    if (!pod) return { ok: false, text: `Error from server (NotFound): pods "${c.pod}" not found` };
    const conditions = (pod.status.conditions ?? []).filter((x) => x.type !== 'Ready');
    conditions.push({ type: 'Ready', status: c.ready ? 'True' : 'False' });
    pod.status = { ...pod.status, conditions };
    delete pod.metadata.uid;
    delete pod.metadata.resourceVersion;
    delete pod.metadata.creationTimestamp;
    const r = this.applyOne(pod);
    if (!r.ok) return r;
    return { ok: true, text: `pod/${c.pod}: readiness probe ${c.ready ? 'succeeded, Ready=True' : 'failed, Ready=False'}` };
  }

  // ---- kubectl get ------------------------------------------------------

  get(c) {
    const ns = c.allNamespaces ? undefined : c.namespace;
    const kinds = {
      services: { resource: 'service', plural: 'services', list: () => this.cluster.get('services', ns) },
      pods: { resource: 'pod', plural: 'pods', list: () => this.cluster.get('pods', ns) },
      endpoints: { resource: 'endpoints', plural: 'endpoints', list: () => this.cluster.get('endpoints', ns) },
      endpointslices: { resource: 'endpointslice.discovery.k8s.io', plural: 'endpointslices.discovery.k8s.io', list: () => this.cluster.get('endpointslices', ns) },
      nodes: { resource: 'node', plural: 'nodes', list: () => this.cluster.get('nodes') },
      servicecidrs: { resource: 'servicecidr.networking.k8s.io', plural: 'servicecidrs.networking.k8s.io', list: () => this.cluster.get('servicecidrs') },
      deployments: { resource: 'deployment.apps', plural: 'deployments.apps', list: () => [...this.deployments.values()].map((d) => this.deploymentObject(d)) },
    };
    const k = kinds[c.kind];
    let objects = k.list();
    const errors = [];
    if (c.names.length) {
      for (const n of c.names) {
        if (!objects.some((o) => o.metadata.name === n)) errors.push(`Error from server (NotFound): ${k.plural} "${n}" not found`);
      }
      objects = objects.filter((o) => c.names.includes(o.metadata.name));
    }
    let text = '';
    if (objects.length === 0 && c.names.length === 0) {
      text = c.allNamespaces ? 'No resources found' : `No resources found in ${c.namespace} namespace.`;
    } else if (objects.length) {
      text = this.render(c, k, objects);
    }
    return { ok: errors.length === 0, text: [text.replace(/\n$/, ''), ...errors].filter(Boolean).join('\n') };
  }

  render(c, k, objects) {
    if (c.output === 'yaml' || c.output === 'json') {
      const data = objects.length === 1 && c.names.length === 1
        ? objects[0]
        : { apiVersion: 'v1', items: objects, kind: 'List', metadata: { resourceVersion: '' } };
      return c.output === 'yaml' ? toYaml(data) : toJson(data);
    }
    if (c.output === 'name') return objects.map((o) => `${k.resource}/${o.metadata.name}`).join('\n');
    const names = objects.map((o) => o.metadata.name);
    const all = !!c.allNamespaces;
    const nameColumn = all ? 1 : 0;
    const pick = (text) => (c.names.length ? keepRows(text, names, nameColumn) : text);
    switch (c.kind) {
      case 'services': {
        let text = pick(this.cluster.kubectlGetServices(all, c.namespace));
        if (c.output === 'wide') {
          const rows = text.trim().split('\n').slice(1).map((l) => l.split(/\s+/)[nameColumn]);
          const bySel = new Map(objects.map((o) => [o.metadata.name, Object.entries(o.spec.selector ?? {}).map(([a, b]) => `${a}=${b}`).join(',') || '<none>']));
          text = addColumn(text, 'SELECTOR', rows.map((n) => bySel.get(n)));
        }
        return text;
      }
      case 'endpoints': return pick(this.cluster.kubectlGet('endpoints', all, c.namespace));
      case 'endpointslices': return pick(this.cluster.kubectlGet('endpointslices', all, c.namespace));
      case 'pods': {
        const header = ['NAME', 'READY', 'STATUS', 'RESTARTS'];
        if (c.output === 'wide') header.push('IP', 'NODE', 'NOMINATED NODE', 'READINESS GATES');
        const rows = objects.map((p) => {
          const ready = Session.ready(p);
          const n = p.spec?.containers?.length ?? 1;
          const row = [p.metadata.name, `${ready ? n : 0}/${n}`, p.status?.phase ?? 'Pending', '0'];
          if (c.output === 'wide') row.push(Session.podIp(p) || '<none>', p.spec?.nodeName || '<none>', '<none>', '<none>');
          return row;
        });
        return table([header, ...rows]);
      }
      case 'deployments': {
        const header = ['NAME', 'READY', 'UP-TO-DATE', 'AVAILABLE'];
        if (c.output === 'wide') header.push('CONTAINERS', 'IMAGES', 'SELECTOR');
        const rows = objects.map((d) => {
          const readyCount = d.status.readyReplicas;
          const row = [d.metadata.name, `${readyCount}/${d.spec.replicas}`, String(d.spec.replicas), String(readyCount)];
          if (c.output === 'wide') row.push(d.spec.template.spec.containers[0].name, d.spec.template.spec.containers[0].image, `app=${d.metadata.name}`);
          return row;
        });
        return table([header, ...rows]);
      }
      case 'nodes':
        return table([['NAME', 'STATUS', 'INTERNAL-IP'], ...objects.map((n) => [n.metadata.name, 'Ready', n.status?.addresses?.find((a) => a.type === 'InternalIP')?.address ?? '<none>'])]);
      case 'servicecidrs':
        return table([['NAME', 'CIDRS'], ...objects.map((o) => [o.metadata.name, (o.spec?.cidrs ?? []).join(',')])]);
      default:
        return '';
    }
  }

  /** A Deployment as kubectl would show it (the console keeps them itself). */
  deploymentObject(d) {
    const pods = this.pods().filter((p) => d.pods.includes(p.metadata.name));
    const ready = pods.filter((p) => Session.ready(p)).length;
    const container = { name: d.image.split('/').pop().split(/[:@]/)[0], image: d.image };
    return {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: d.name, namespace: 'default', labels: { app: d.name } },
      spec: { replicas: d.replicas, selector: { matchLabels: { app: d.name } }, template: { metadata: { labels: { app: d.name } }, spec: { containers: [container] } } },
      status: { replicas: pods.length, readyReplicas: ready, availableReplicas: ready, updatedReplicas: pods.length },
    };
  }

  /** Which Deployment owns a pod, if any. */
  ownerOf(podName) {
    for (const d of this.deployments.values()) if (d.pods.includes(podName)) return d.name;
    return null;
  }
}

/** A session rebuilt from a service CIDR, a seed and a command history. */
export function replay(Cluster, { cidr, seed, history }) {
  const s = new Session(Cluster, { cidr, seed });
  const transcript = [];
  for (const h of history) transcript.push({ ...h, result: s.run(h.line, h.stdin ?? null) });
  return { session: s, transcript };
}

export { ipToBig };
