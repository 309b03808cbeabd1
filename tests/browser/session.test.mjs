// The playground's session over the Node build of the core
// (target/wasm/node): every console line goes to the core's console
// (Cluster.kubectl); web/js/session.js keeps the history that rebuilds the
// cluster. node --test session.test.mjs

import test from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const { Cluster } = createRequire(import.meta.url)(join(ROOT, 'target/wasm/node/svcnet_wasm.js'));
const { Session, replay } = await import(join(ROOT, 'web/js/session.js'));
const { encodeState, decodeState } = await import(join(ROOT, 'web/js/state.js'));

const start = (cidr = '10.96.0.0/12', seed = 0) => new Session(Cluster, { cidr, seed });

test('kubectl create svc clusterip gets the core\'s ClusterIP and prints kubectl\'s line, with a note on the selector', () => {
  const s = start();
  const created = s.run('kubectl create svc clusterip test --tcp=80');
  assert.equal(created.text, 'service/test created');
  assert.equal(created.effect, 'change');
  assert.match(created.note, /selector app=test/);
  const direct = Cluster.playground('10.96.0.0/12', 0n);
  const [svc] = direct.apply('apiVersion: v1\nkind: Service\nmetadata: {name: test}\nspec: {ports: [{port: 80}]}\n');
  assert.equal(s.service('test').spec.clusterIP, svc.spec.clusterIP);
  assert.equal(s.run('kubectl create svc clusterip test --tcp=80').text, 'Error from server (AlreadyExists): services "test" already exists');
  assert.equal(s.run('kubectl get frobs').text, 'error: the server doesn\'t have a resource type "frobs"');
  assert.equal(s.version, 1, 'only the first create changed the cluster');
});

test('deployments make pods with sequential IPs from node-1\'s pod range; deleting one replaces it', () => {
  const s = start();
  assert.equal(s.run('kubectl create deployment web --image=nginx --replicas=3').text, 'deployment.apps/web created');
  // CoreDNS (kube-system) holds .2 and .3 from the start, as on a kubeadm node.
  assert.deepEqual(s.pods().map(Session.podIp).sort(), ['10.244.0.4', '10.244.0.5', '10.244.0.6']);
  const victim = s.podsOf('web')[0];
  assert.equal(s.run(`kubectl delete pod ${victim}`).text, `pod "${victim}" deleted`);
  assert.equal(s.podsOf('web').length, 3);
  assert.ok(s.pods().some((p) => Session.podIp(p) === '10.244.0.7'), 'the replacement gets the next address');
  const exposed = s.run('kubectl expose deployment web --port=80 --target-port=8080');
  assert.equal(exposed.text, 'service/web exposed');
  assert.match(exposed.note, /copied the selector app=web from deployment web/);
  assert.match(s.run('kubectl get endpoints web').text, /^Warning: v1 Endpoints is deprecated in v1\.33\+; use discovery\.k8s\.io\/v1 EndpointSlice\nNAME\s+ENDPOINTS\s+AGE\nweb\s+10\.244\.0\.\d:8080,10\.244\.0\.\d:8080,10\.244\.0\.\d:8080\s+\d+s$/);
  s.run('kubectl scale deployment web --replicas=1');
  assert.equal(s.pods().length, 1);
  assert.equal(s.run('kubectl delete deployment web').text, 'deployment.apps "web" deleted');
  assert.equal(s.pods().length, 0);
});

test('an unready pod leaves the IPVS table but stays in the EndpointSlice', () => {
  const s = start();
  s.run('kubectl create deployment web --image=nginx --replicas=2');
  s.run('kubectl expose deployment web --port=80');
  const ip = s.service('web').spec.clusterIP;
  const reals = () => Object.keys(s.cluster.ipvsTable(s.node).virtualServers[`TCP/${ip}:80`].realServers);
  assert.equal(reals().length, 2);
  const pod = s.podsOf('web')[0];
  assert.match(s.run(`simulate unready ${pod}`).text, /Ready=False/);
  assert.equal(reals().length, 1);
  const endpoints = s.slices().filter((x) => x.metadata.labels['kubernetes.io/service-name'] === 'web').flatMap((x) => x.endpoints);
  assert.equal(endpoints.length, 2);
  s.run(`simulate ready ${pod}`);
  assert.equal(reals().length, 2);
});

test('replaying the history rebuilds the same cluster; the URL state round-trips', () => {
  const s = start('10.100.0.0/16', 9);
  s.run('kubectl create svc nodeport a --tcp=80:8080');
  s.run('kubectl apply -f -', 'apiVersion: v1\nkind: Service\nmetadata: {name: b}\nspec: {ports: [{port: 53, protocol: UDP}]}\n');
  s.run('kubectl delete svc kubernetes');
  s.run('kubectl get svc');
  s.run('help');
  assert.equal(s.history.length, 4, 'help is not kept; the read is');
  const state = decodeState(encodeState(s.state()));
  assert.deepEqual(state, { cidr: '10.100.0.0/16', seed: 9, controlPlane: 'single', history: s.history });
  const ha = decodeState(encodeState({ ...s.state(), controlPlane: 'ha' }));
  assert.equal(ha.controlPlane, 'ha');
  assert.equal(replay(Cluster, ha).session.cluster.kubernetesEndpoints().length, 3);
  const { session } = replay(Cluster, state);
  // help ran after the last kept command and moved the clock; it is not
  // replayed, so both clocks go to one time before the comparison.
  for (const c of [session.cluster, s.cluster]) c.tick(3_600_000);
  assert.equal(session.cluster.snapshotJson(), s.cluster.snapshotJson());
  assert.equal(decodeState('s=not base64!'), null);
});

test('Tab completion words come from the core: commands, kinds and names', () => {
  const s = start();
  s.run('kubectl create svc clusterip shop --tcp=80');
  const words = s.cluster.vocabulary();
  for (const w of ['kubectl', 'svc', 'endpointslices', 'deploy', 'shop', 'kubernetes', '--tcp=']) assert.ok(words.includes(w), w);
});

test('the cluster clock moves with the page; a replay gives every object the age it had', () => {
  const s = start();
  s.run('kubectl create svc clusterip web --tcp=80', null, 30_000);
  const table = s.run('kubectl get svc web', null, 30_000 + 150_000).text;
  assert.match(table, /^NAME\s+TYPE\s+CLUSTER-IP\s+EXTERNAL-IP\s+PORT\(S\)\s+AGE\nweb\s+ClusterIP\s+\S+\s+<none>\s+80\/TCP\s+2m30s$/);
  assert.deepEqual(s.history.map((h) => h.at), [30_000, 180_000]);
  const { session, transcript } = replay(Cluster, decodeState(encodeState(s.state())));
  assert.equal(transcript[1].result.text, table);
  assert.equal(session.cluster.kubernetesEndpoints().length, 1, 'the apiserver kept its lease through the 3 minutes');
});
