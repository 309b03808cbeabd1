// The guided tour: the classic walkthrough of how a Service gets its
// ClusterIP, step by step. Each step runs its commands in the real console,
// so what you read is what the core did. Back rebuilds the cluster from the
// commands before that step.

const EXTERNAL_DB = `apiVersion: v1
kind: Service
metadata:
  name: external-db
spec:
  ports:
  - name: postgres
    port: 5432
    targetPort: 5432
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: external-db-1
  labels:
    kubernetes.io/service-name: external-db
addressType: IPv4
ports:
- name: postgres
  port: 5432
  protocol: TCP
endpoints:
- addresses: ["192.168.10.20"]
  conditions:
    ready: true
`;

/** The example manifest the YAML box offers. */
export const SELECTORLESS_EXAMPLE = EXTERNAL_DB;

const ip = (session, name) => session.service(name)?.spec.clusterIP ?? '?';
const firstPod = (session, dep) => session.podsOf(dep)[0] ?? 'test';

/** Steps: `title`, `body(session)` (HTML), `commands(session)`, `view`. */
export const STEPS = [
  {
    title: 'A fresh cluster already has two Services',
    commands: () => ['kubectl get svc', 'kubectl get svc -A'],
    view: 'services',
    body: (s) => `<p>The cluster starts on the service CIDR <code>10.96.0.0/12</code> (kubeadm's default). In <code>default</code> it already has one Service, <code>kubernetes</code>: the API server itself, whose endpoint is the apiserver on the node at <code>${s.cluster.kubernetesEndpoints().join(', ')}</code> (kubeadm's default port, 6443). Its ClusterIP is <code>${ip(s, 'kubernetes')}</code>, the <b>first address</b> of the range. That is a rule: the first address always belongs to <code>kubernetes</code>, which is why pods can count on it. <code>kubectl get svc -A</code> shows the other one kubeadm installs: <code>kube-dns</code> in <code>kube-system</code>, on the <b>tenth</b> address, in front of two CoreDNS pods.</p>`,
  },
  {
    title: 'Create a Service: it gets an address from the range',
    commands: () => ['kubectl create svc clusterip test --tcp=80', 'kubectl get svc test'],
    view: 'services',
    body: (s) => `<p><code class="cmd">kubectl create svc clusterip test --tcp=80</code> asked for a Service; the API server picked <code>${ip(s, 'test')}</code> at random from the <b>dynamic band</b> of 10.96.0.0/12. Find it on the range map: the highlighted block. The low static band stays free for addresses people choose by hand.</p>`,
  },
  {
    title: 'No pods match yet, so nothing answers',
    commands: () => ['kubectl get endpointslices'],
    view: 'slices',
    body: () => `<p>The Service selects pods labelled <code>app=test</code>, and there are none: its EndpointSlice has no endpoints. IPVS already has a virtual server for the ClusterIP, but with no real servers behind it, a connection to it fails (see the Packet walk tab).</p>`,
  },
  {
    title: 'Delete kubernetes: it comes back, on the same address',
    commands: () => ['kubectl delete svc kubernetes', 'kubectl get svc kubernetes'],
    view: 'services',
    body: (s) => `<p>The API server owns the <code>kubernetes</code> Service and recreates it at once, on <code>${ip(s, 'kubernetes')}</code> again: the first address is reserved for it, never drawn at random, so it cannot be lost to another Service.</p>`,
  },
  {
    title: 'Pods that match: endpoints appear',
    commands: () => ['kubectl create deployment test --image=nginx --replicas=2', 'kubectl get pods -o wide', 'kubectl get endpointslices'],
    view: 'slices',
    body: () => `<p><code class="cmd">kubectl create deployment test</code> labels its pods <code>app=test</code>, exactly the Service's selector. Each pod got an address from the node's pod range, and the EndpointSlice controller added both pods to the Service's slice as ready endpoints.</p>`,
  },
  {
    title: 'IPVS: one virtual server, one real server per ready pod',
    commands: () => ['ipvsadm -Ln'],
    view: 'walk',
    body: (s) => `<p>kube-proxy turned the slice into IPVS rules on the node: a virtual server <code>${ip(s, 'test')}:80</code> with the two pods as real servers (<code>Masq</code>: NAT). Press <b>Send a request</b> in the Packet walk to follow a connection: the destination is rewritten from the ClusterIP to a pod, and the reply's source back again.</p>`,
  },
  {
    title: 'A pod stops being ready: traffic avoids it',
    commands: (s) => [`simulate unready ${firstPod(s, 'test')}`, 'kubectl get endpointslices'],
    view: 'walk',
    body: (s) => `<p>Its readiness probe now fails. The pod stays in the EndpointSlice, marked <em>not ready</em>, and kube-proxy removes it from the IPVS virtual server: every request goes to the other pod. Send a few requests to see. (Making it ready, or deleting it so the Deployment starts a new one, are the buttons beside each pod.)</p>`,
  },
  {
    title: 'A Service without a selector, and a slice you write',
    commands: () => [{ line: 'kubectl apply -f -', stdin: EXTERNAL_DB }, 'kubectl get endpointslices'],
    view: 'slices',
    body: (s) => `<p>A Service with no selector gets a ClusterIP (<code>${ip(s, 'external-db')}</code>) but no EndpointSlice from the controller. You add one yourself, labelled <code>kubernetes.io/service-name: external-db</code>, pointing at any address, here a database outside the cluster at 192.168.10.20. Pods keep using the stable name <code>external-db</code>; IPVS forwards to the address you gave.</p>`,
  },
  {
    title: 'Share what you built',
    commands: () => [],
    view: 'dns',
    body: () => `<p>Every Service also got DNS names, shown here. The page's address holds the service CIDR, the seed and every command you ran: <b>Copy link</b> and whoever opens it gets this same cluster, with the same addresses. Now try your own: a <code>/29</code> range fills up after five Services.</p>`,
  },
];
