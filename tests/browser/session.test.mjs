// The playground's console logic without a browser: web/js/session.js over
// the Node build of the core (target/wasm/node). node --test session.test.mjs

import test from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const { Cluster } = createRequire(import.meta.url)(join(ROOT, 'target/wasm/node/svcnet_wasm.js'));
const { Session, replay, clusterOptions } = await import(join(ROOT, 'web/js/session.js'));
const { parse, words, UsageError } = await import(join(ROOT, 'web/js/kubectl.js'));
const { encodeState, decodeState } = await import(join(ROOT, 'web/js/state.js'));
const { toYaml } = await import(join(ROOT, 'web/js/format.js'));

const start = (cidr = '10.96.0.0/12', seed = 0) => new Session(Cluster, { cidr, seed });

test('kubectl create svc clusterip gets the core\'s ClusterIP and prints kubectl\'s line', () => {
  const s = start();
  assert.deepEqual(s.run('kubectl create svc clusterip test --tcp=80').text, 'service/test created');
  const direct = new Cluster(clusterOptions('10.96.0.0/12', 0));
  const [svc] = direct.apply('apiVersion: v1\nkind: Service\nmetadata: {name: test}\nspec: {ports: [{port: 80}]}\n');
  assert.equal(s.service('test').spec.clusterIP, svc.spec.clusterIP);
  assert.deepEqual(s.service('test').spec.ports, [{ name: '80-80', port: 80, protocol: 'TCP', targetPort: 80 }]);
  assert.deepEqual(s.service('test').spec.selector, { app: 'test' });
  assert.equal(s.run('kubectl create svc clusterip test --tcp=80').text, 'Error from server (AlreadyExists): services "test" already exists');
});

test('errors are Kubernetes\' own', () => {
  const s = start();
  assert.equal(s.run('kubectl delete svc nope').text, 'Error from server (NotFound): services "nope" not found');
  assert.match(s.run('kubectl create svc clusterip Bad_Name --tcp=80').text, /^The Service "Bad_Name" is invalid: metadata\.name: Invalid value: "Bad_Name": a lowercase RFC 1123 label/);
  assert.equal(s.run('kubectl get svc nope').text, 'Error from server (NotFound): services "nope" not found');
  assert.equal(s.run('kubectl scale deployment nope --replicas=1').text, 'Error from server (NotFound): deployments.apps "nope" not found');
  assert.equal(s.run('kubectl create deployment x').text, 'error: required flag(s) "image" not set');
  const small = start('10.96.0.0/29');
  for (let i = 0; i < 5; i++) assert.equal(small.run(`kubectl create svc clusterip s${i} --tcp=80`).ok, true);
  assert.equal(small.run('kubectl create svc clusterip s5 --tcp=80').text, 'Error from server (InternalError): Internal error occurred: failed to allocate a serviceIP for Service "s5": range is full');
});

test('deployments make pods with sequential IPs from node-1\'s pod range; deleting one replaces it', () => {
  const s = start();
  assert.equal(s.run('kubectl create deployment web --image=nginx --replicas=3').text, 'deployment.apps/web created');
  assert.deepEqual(s.pods().map(Session.podIp).sort(), ['10.244.0.2', '10.244.0.3', '10.244.0.4']);
  const victim = s.deployments.get('web').pods[0];
  assert.equal(s.run(`kubectl delete pod ${victim}`).text, `pod "${victim}" deleted`);
  assert.equal(s.deployments.get('web').pods.length, 3);
  assert.ok(s.pods().some((p) => Session.podIp(p) === '10.244.0.5'), 'the replacement gets the next address');
  assert.equal(s.run('kubectl expose deployment web --port=80 --target-port=8080').text, 'service/web exposed');
  assert.match(s.run('kubectl get endpoints web').text, /^NAME\s+ENDPOINTS\nweb\s+10\.244\.0\.\d:8080,10\.244\.0\.\d:8080,10\.244\.0\.\d:8080$/);
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
  const reals = () => Object.keys(s.cluster.ipvsTable('node-1').virtualServers[`TCP/${ip}:80`].realServers);
  assert.equal(reals().length, 2);
  const pod = s.deployments.get('web').pods[0];
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
  const state = decodeState(encodeState({ cidr: s.cidr, seed: s.seed, history: s.history }));
  assert.deepEqual(state, { cidr: '10.100.0.0/16', seed: 9, history: s.history });
  const { session } = replay(Cluster, state);
  assert.equal(session.cluster.snapshotJson(), s.cluster.snapshotJson());
  assert.equal(decodeState('s=not base64!'), null);
});

test('the command line parser', () => {
  assert.deepEqual(words(`kubectl get svc "a b" 'c'`), ['kubectl', 'get', 'svc', 'a b', 'c']);
  assert.deepEqual(parse('kubectl get po -owide').output, 'wide');
  assert.deepEqual(parse('kubectl create svc nodeport a --tcp=80:8080,443').ports, [{ port: 80, targetPort: 8080 }, { port: 443, targetPort: 443 }]);
  assert.equal(parse('kubectl delete svc/test').names[0], 'test');
  assert.throws(() => parse('kubectl get frobs'), UsageError);
  assert.throws(() => parse('kubectl create svc clusterip'), /exactly one NAME is required, got 0/);
  assert.equal(toYaml({ b: ['10.96.0.1', '80'], a: { x: '' } }), 'a:\n  x: ""\nb:\n- 10.96.0.1\n- "80"');
});
