// One playground session: the core's Cluster (wasm) and the command
// history that rebuilds it.
//
// Every command line goes to the core's console (`Cluster.kubectl`), which
// answers as kubectl and ipvsadm would and runs what the apiserver and the
// controllers run: allocation, validation and its messages, Deployments
// and their Pods, pod IPs, EndpointSlices, the IPVS table, DNS. This file
// keeps the history, the options the cluster started from, and reads
// objects back for the views.

export class Session {
  /**
   * Starts a cluster. Throws the core's message when the service CIDR is
   * refused (`--service-cluster-ip-range ...`).
   */
  constructor(Cluster, { cidr, seed = 0, controlPlane = 'single' }) {
    this.Cluster = Cluster;
    this.cidr = cidr;
    this.seed = seed;
    /** `single`, `ha` or `managed`: where the apiservers run. */
    this.controlPlane = controlPlane;
    this.cluster = Cluster.playground(cidr, BigInt(seed), controlPlane);
    /** The node whose IPVS table the views show. */
    this.node = this.cluster.get('nodes')[0]?.metadata.name ?? '';
    /** Commands run, `{ line, stdin? }`, enough to rebuild this state. */
    this.history = [];
    /** Bumped on every change, so views know when to redraw. */
    this.version = 0;
    /** When the cluster's clock read 0, in the page's wall-clock time. */
    this.started = Date.now();
  }

  /** What rebuilds this session: `{ cidr, seed, controlPlane, history }`. */
  state(history = this.history) {
    return { cidr: this.cidr, seed: this.seed, controlPlane: this.controlPlane, history };
  }

  /**
   * Runs one command line; `{ ok, text, note?, effect }` as the core
   * answers. The cluster's clock first moves to `at` (milliseconds since
   * the cluster started; now, by the page's clock, unless a replay gives
   * the time the command first ran).
   */
  run(line, stdin = null, at = Date.now() - this.started) {
    this.cluster.tick(at);
    this.started = Date.now() - at;
    const result = this.cluster.kubectl(line, stdin ?? undefined);
    if (result.effect === 'read' || result.effect === 'change') {
      this.history.push(stdin == null ? { line, at } : { line, stdin, at });
    }
    if (result.effect === 'change') this.version++;
    return result;
  }

  // ---- reading, for the views ---------------------------------------------

  services() { return this.cluster.get('services', 'default'); }
  pods() { return this.cluster.get('pods', 'default'); }
  slices() { return this.cluster.get('endpointslices', 'default'); }
  deployments() { return this.cluster.get('deployments', 'default'); }
  service(name) { return this.services().find((s) => s.metadata.name === name); }

  /** The Pods `kubectl create deployment NAME` made (they carry `app=NAME`). */
  podsOf(deployment) {
    return this.pods().filter((p) => p.metadata.labels?.app === deployment).map((p) => p.metadata.name);
  }

  /** A pod's first address, as the core stored it. */
  static podIp(pod) {
    return pod.status?.podIPs?.[0]?.ip ?? pod.status?.podIP ?? '';
  }
}

/** A session rebuilt from a service CIDR, a seed and a command history. */
export function replay(Cluster, { cidr, seed, controlPlane, history }) {
  const s = new Session(Cluster, { cidr, seed, controlPlane });
  const transcript = [];
  for (const h of history) transcript.push({ ...h, result: s.run(h.line, h.stdin ?? null, h.at ?? 0) });
  return { session: s, transcript };
}

