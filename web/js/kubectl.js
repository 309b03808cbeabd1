// The kubectl command line: words and flags in, one command object out.
//
// Only the parsing lives here, worded like kubectl's own client-side
// errors ("error: exactly one NAME is required, got 0"). What a command does
// is in session.js; what Kubernetes decides (allocation, validation,
// EndpointSlices, IPVS, DNS) is the core's, through the wasm package.

/** A client-side error, printed as kubectl prints them: `error: ...`. */
export class UsageError extends Error {}

/** Splits a command line into words, honouring '…' and "…" quoting. */
export function words(line) {
  const out = [];
  let cur = '';
  let quote = null;
  let has = false;
  for (const ch of line) {
    if (quote) {
      if (ch === quote) quote = null;
      else cur += ch;
    } else if (ch === '"' || ch === "'") {
      quote = ch;
      has = true;
    } else if (/\s/.test(ch)) {
      if (has || cur) out.push(cur);
      cur = '';
      has = false;
    } else {
      cur += ch;
    }
  }
  if (quote) throw new UsageError('unterminated quote in the command line');
  if (has || cur) out.push(cur);
  return out;
}

/** Positional words and flags (`--a=b`, `--a b`, `-o yaml`, `-A`). */
function split(args, { boolFlags = [] } = {}) {
  const positional = [];
  const flags = new Map();
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a.startsWith('-') && a.length > 1) {
      let name;
      let value;
      const eq = a.indexOf('=');
      if (/^-[a-zA-Z]./.test(a) && !a.startsWith('--') && eq < 0 && !boolFlags.includes(a)) {
        name = a.slice(0, 2); // -owide, -oyaml
        value = a.slice(2);
      } else if (eq > 0) {
        name = a.slice(0, eq);
        value = a.slice(eq + 1);
      } else {
        name = a;
        if (boolFlags.includes(name)) value = 'true';
        else if (i + 1 < args.length) value = args[++i];
        else throw new UsageError(`flag needs an argument: ${name}`);
      }
      name = name.replace(/^--?/, '');
      if (!flags.has(name)) flags.set(name, []);
      flags.get(name).push(value);
    } else {
      positional.push(a);
    }
  }
  return { positional, flags };
}

function flag(flags, names, fallback) {
  for (const n of names) if (flags.has(n)) return flags.get(n).at(-1);
  return fallback;
}

function only(flags, allowed) {
  for (const name of flags.keys()) {
    if (!allowed.includes(name)) throw new UsageError(`unknown flag: --${name}`);
  }
}

function integer(value, what) {
  if (!/^-?\d+$/.test(value)) throw new UsageError(`invalid argument "${value}" for "${what}" flag: strconv.ParseInt: parsing "${value}": invalid syntax`);
  return Number(value);
}

/** The resource a `kubectl get|delete` word names, kubectl's short names included. */
const RESOURCES = {
  svc: 'services', service: 'services', services: 'services',
  po: 'pods', pod: 'pods', pods: 'pods',
  ep: 'endpoints', endpoints: 'endpoints',
  endpointslice: 'endpointslices', endpointslices: 'endpointslices',
  'endpointslices.discovery.k8s.io': 'endpointslices',
  deploy: 'deployments', deployment: 'deployments', deployments: 'deployments',
  'deployments.apps': 'deployments',
  no: 'nodes', node: 'nodes', nodes: 'nodes',
  servicecidr: 'servicecidrs', servicecidrs: 'servicecidrs',
};

function resource(word) {
  const r = RESOURCES[word?.toLowerCase()];
  if (!r) throw new UsageError(`the server doesn't have a resource type "${word}"`);
  return r;
}

/** `--tcp=80` or `--tcp=80:8080` → { port, targetPort }. */
function tcpPort(spec) {
  const m = /^(\d+)(?::(\d+))?$/.exec(spec);
  if (!m) throw new UsageError(`--tcp must be PORT or PORT:TARGETPORT, got "${spec}"`);
  return { port: Number(m[1]), targetPort: Number(m[2] ?? m[1]) };
}

/**
 * Parses one command line. Returns `{ verb, ... }`; throws UsageError.
 * `stdin` is the text for `kubectl apply -f -`.
 */
export function parse(line, stdin = null) {
  const w = words(line.trim());
  if (w.length === 0) return { verb: 'noop' };
  if (w[0] === 'help' || w[0] === '?') return { verb: 'help' };
  if (w[0] === 'clear') return { verb: 'clear' };
  if (w[0] === 'ipvsadm') return parseIpvsadm(w.slice(1));
  if (w[0] === 'ipvsadm-save') return { verb: 'ipvsadm', save: true };
  if (w[0] === 'simulate') return parseSimulate(w.slice(1));
  if (w[0] !== 'kubectl' && w[0] !== 'k') {
    throw new UsageError(`command not found: ${w[0]} (type "help" for the commands this console knows)`);
  }
  const [verb, ...rest] = w.slice(1);
  switch (verb) {
    case 'create': return parseCreate(rest);
    case 'expose': return parseExpose(rest);
    case 'apply': return parseApply(rest, stdin);
    case 'delete': return parseDelete(rest);
    case 'scale': return parseScale(rest);
    case 'get': return parseGet(rest);
    case undefined: return { verb: 'help' };
    default:
      throw new UsageError(`unknown command "${verb}" for "kubectl" (this console knows create, expose, apply, delete, scale, get)`);
  }
}

function parseCreate(args) {
  const [what, ...rest] = args;
  if (what === 'service' || what === 'svc') {
    const [type, ...more] = rest;
    const types = { clusterip: 'ClusterIP', nodeport: 'NodePort', loadbalancer: 'LoadBalancer' };
    if (!types[type]) throw new UsageError(`kubectl create service needs a type: clusterip, nodeport or loadbalancer (got "${type ?? ''}")`);
    const { positional, flags } = split(more);
    only(flags, ['tcp', 'clusterip', 'node-port', 'dry-run']);
    if (positional.length !== 1) throw new UsageError(`exactly one NAME is required, got ${positional.length}`);
    const tcp = flags.get('tcp') ?? [];
    if (tcp.length === 0 && flag(flags, ['clusterip']) !== 'None') {
      throw new UsageError('at least one tcp port specifier must be provided');
    }
    const ports = tcp.flatMap((t) => t.split(',')).map(tcpPort);
    const nodePort = flags.has('node-port') ? integer(flag(flags, ['node-port']), 'node-port') : null;
    return { verb: 'create-service', name: positional[0], type: types[type], ports, clusterIP: flag(flags, ['clusterip']), nodePort };
  }
  if (what === 'deployment' || what === 'deploy') {
    const { positional, flags } = split(rest);
    only(flags, ['image', 'replicas', 'r', 'port']);
    if (positional.length !== 1) throw new UsageError(`exactly one NAME is required, got ${positional.length}`);
    const image = flag(flags, ['image']);
    if (!image) throw new UsageError('required flag(s) "image" not set');
    const replicas = integer(flag(flags, ['replicas', 'r'], '1'), 'replicas');
    if (replicas < 0) throw new UsageError('--replicas must be 0 or more');
    const port = flags.has('port') ? integer(flag(flags, ['port']), 'port') : null;
    return { verb: 'create-deployment', name: positional[0], image, replicas, port };
  }
  throw new UsageError(`this console creates "service" (svc) and "deployment" objects; use kubectl apply -f - for anything else`);
}

function parseExpose(args) {
  const { positional, flags } = split(args);
  only(flags, ['port', 'target-port', 'type', 'name', 'protocol']);
  if (positional.length === 2 && resource(positional[0]) === 'deployments') positional.splice(0, 1, 'deployment');
  const m = positional.length === 1 ? /^(deployment|deploy|deployments)\/(.+)$/.exec(positional[0]) : null;
  let name;
  if (m) name = m[2];
  else if (positional.length === 2 && positional[0] === 'deployment') name = positional[1];
  else throw new UsageError('this console exposes deployments: kubectl expose deployment NAME --port=P [--target-port=T] [--type=ClusterIP|NodePort|LoadBalancer]');
  if (!flags.has('port')) throw new UsageError(`couldn't find port via --port flag or introspection`);
  const port = integer(flag(flags, ['port']), 'port');
  const target = flag(flags, ['target-port'], String(port));
  const targetPort = /^\d+$/.test(target) ? Number(target) : target;
  const type = flag(flags, ['type'], 'ClusterIP');
  return { verb: 'expose', deployment: name, name: flag(flags, ['name'], name), port, targetPort, type, protocol: flag(flags, ['protocol'], 'TCP') };
}

function parseApply(args, stdin) {
  const { positional, flags } = split(args);
  only(flags, ['f', 'filename']);
  if (positional.length) throw new UsageError(`unexpected args: [${positional.join(' ')}]`);
  const file = flag(flags, ['f', 'filename']);
  if (file !== '-') throw new UsageError('this console reads manifests from standard input only: kubectl apply -f - (paste the YAML in the box that opens)');
  if (stdin == null) return { verb: 'apply-prompt' };
  return { verb: 'apply', manifest: stdin };
}

function parseDelete(args) {
  const { positional, flags } = split(args);
  only(flags, ['n', 'namespace']);
  let kind;
  let names;
  if (positional.length === 1 && positional[0].includes('/')) {
    const [k, n] = positional[0].split('/');
    kind = resource(k);
    names = [n];
  } else {
    if (positional.length === 0) throw new UsageError('You must provide one or more resources by argument or filename.');
    kind = resource(positional[0]);
    names = positional.slice(1);
    if (names.length === 0) throw new UsageError(`resource(s) were provided, but no name was specified`);
  }
  return { verb: 'delete', kind, names, namespace: flag(flags, ['n', 'namespace'], 'default') };
}

function parseScale(args) {
  const { positional, flags } = split(args);
  only(flags, ['replicas']);
  let name;
  if (positional.length === 1 && /^(deployment|deploy|deployments)\//.test(positional[0])) name = positional[0].split('/')[1];
  else if (positional.length === 2 && resource(positional[0]) === 'deployments') name = positional[1];
  else throw new UsageError('this console scales deployments: kubectl scale deployment NAME --replicas=N');
  if (!flags.has('replicas')) throw new UsageError('required flag(s) "replicas" not set');
  const replicas = integer(flag(flags, ['replicas']), 'replicas');
  if (replicas < 0) throw new UsageError('The --replicas=COUNT flag is required, and COUNT must be greater than or equal to 0');
  return { verb: 'scale', name, replicas };
}

function parseGet(args) {
  const { positional, flags } = split(args, { boolFlags: ['-A', '--all-namespaces'] });
  only(flags, ['o', 'output', 'A', 'all-namespaces', 'n', 'namespace']);
  if (positional.length === 0) throw new UsageError('You must specify the type of resource to get. Try kubectl get svc, endpoints, endpointslices or pods.');
  let kind;
  let names;
  if (positional[0].includes('/')) {
    const [k, n] = positional[0].split('/');
    kind = resource(k);
    names = [n];
  } else {
    kind = resource(positional[0]);
    names = positional.slice(1);
  }
  const output = flag(flags, ['o', 'output'], '');
  if (!['', 'wide', 'yaml', 'json', 'name'].includes(output)) {
    throw new UsageError(`unable to match a printer suitable for the output format "${output}", allowed formats are: json,name,wide,yaml`);
  }
  const all = flags.has('A') || flags.has('all-namespaces');
  return { verb: 'get', kind, names, output, allNamespaces: all, namespace: flag(flags, ['n', 'namespace'], 'default') };
}

function parseIpvsadm(args) {
  const a = args.join(' ');
  if (a === '' || /^-L?n$|^-Ln$|^-nL$|^-L -n$|^-n -L$/.test(a)) return { verb: 'ipvsadm', save: false };
  if (/^-S( -n)?$|^-Sn$/.test(a)) return { verb: 'ipvsadm', save: true };
  throw new UsageError('this console shows the table: ipvsadm -Ln, or ipvsadm-save -n');
}

function parseSimulate(args) {
  const [what, name] = args;
  if ((what === 'unready' || what === 'ready') && name && args.length === 2) {
    return { verb: 'readiness', pod: name, ready: what === 'ready' };
  }
  throw new UsageError('simulate unready POD | simulate ready POD');
}

/** The `help` text. */
export const HELP = `Commands (the same as kubectl's; the default namespace only):
  kubectl create svc clusterip|nodeport|loadbalancer NAME --tcp=PORT[:TARGET]
  kubectl create deployment NAME --image=IMAGE [--replicas=N] [--port=P]
  kubectl expose deployment NAME --port=P [--target-port=T] [--type=NodePort]
  kubectl apply -f -             (opens a box for YAML; Ctrl+Enter applies it)
  kubectl delete svc|pod|deployment|endpointslice NAME
  kubectl scale deployment NAME --replicas=N
  kubectl get svc|endpoints|endpointslices|pods|deployments [NAME] [-o wide|yaml|json|name]
  ipvsadm -Ln                    the IPVS table kube-proxy programs on node-1
  ipvsadm-save -n                the same, as ipvs-agent plan --format ipvsadm-save
Playground only:
  simulate unready POD           the pod's readiness probe starts failing
  simulate ready POD             and passes again
  clear                          clear the screen (the cluster stays)
Keys: Up/Down walk the history, Tab completes a word, Ctrl+L clears.`;
