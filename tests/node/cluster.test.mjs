// The JS API of the wasm build (`Cluster`, `runVector`), used directly as the
// playground uses it. Where a native result exists (the reports written by
// `cargo test -p svcnet-core --test vectors`), the JS result must equal it.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { loadWasm, nativeReportsDir } from './wasm.mjs';

const { Cluster, runVector } = loadWasm();

/** A step of a native vector report (1-based, as the report numbers them). */
function nativeStep(vector, step) {
  const report = JSON.parse(readFileSync(path.join(nativeReportsDir, `${vector}.json`), 'utf8'));
  return report.steps[step - 1];
}

const service = (name, extra = '') =>
  `apiVersion: v1\nkind: Service\nmetadata: {name: ${name}}\nspec: {ports: [{port: 80}]${extra}}\n`;

const rangeFull = (name) => `Internal error occurred: failed to allocate a serviceIP for Service "${name}": range is full`;

test('a /29 fills up, then apply throws the native "range is full" Error', () => {
  // tests/vectors/clusterip-29-and-30.yaml, step 3, records the native message.
  assert.equal(nativeStep('clusterip-29-and-30', 3).error, rangeFull('one-more-0'));

  const cluster = new Cluster({ serviceClusterIpRange: '192.168.100.0/29', seed: 11 });
  assert.equal(cluster.kubernetesIp, '192.168.100.1');
  const ips = [];
  for (let i = 0; i < 5; i++) {
    const [svc] = cluster.apply(service(`svc-${i}`));
    ips.push(svc.spec.clusterIP);
  }
  assert.deepEqual(ips.toSorted(), ['192.168.100.2', '192.168.100.3', '192.168.100.4', '192.168.100.5', '192.168.100.6']);
  assert.throws(
    () => cluster.apply(service('one-more')),
    (e) => e instanceof Error && e.message === rangeFull('one-more') && e.applied.length === 0,
  );
  assert.equal(cluster.usage().clusterIPs[0].used, '6');
});

test('a manifest with refused objects throws their messages joined by newlines, keeping the accepted ones', () => {
  const cluster = new Cluster({ serviceClusterIpRange: '10.0.0.0/29' });
  const manifest = [0, 1, 2, 3, 4, 5, 6].map((i) => service(`s${i}`)).join('---\n');
  assert.throws(
    () => cluster.apply(manifest),
    (e) =>
      e instanceof Error &&
      e.message === `${rangeFull('s5')}\n${rangeFull('s6')}` &&
      e.applied.map((s) => s.metadata.name).join() === 's0,s1,s2,s3,s4',
  );
  assert.equal(cluster.get('Service', 'default').length, 6);
  assert.throws(() => cluster.apply('kind: [\n'), (e) => e instanceof Error && e.message.startsWith('document 1: '));
});

test('apply returns the stored objects exactly as the native core stores them', () => {
  // tests/vectors/clusterip-bands-24.yaml: same config, same first steps.
  const cluster = new Cluster({ serviceClusterIpRange: '10.0.0.0/24', seed: 7 });
  const pinned = 'apiVersion: v1\nkind: Service\nmetadata: {name: pinned}\nspec: {clusterIP: 10.0.0.16, ports: [{port: 80}]}\n';
  assert.deepEqual(cluster.apply(pinned), nativeStep('clusterip-bands-24', 2).output);
  const usage = cluster.usage();
  assert.deepEqual(usage, nativeStep('clusterip-bands-24', 3).output);
  assert.deepEqual(
    [usage.clusterIPs[0].staticFirst, usage.clusterIPs[0].staticLast, usage.clusterIPs[0].dynamicFirst, usage.clusterIPs[0].dynamicLast],
    ['10.0.0.1', '10.0.0.16', '10.0.0.17', '10.0.0.254'],
  );
  const [np] = cluster.apply(service('np', ', type: NodePort'));
  assert.ok(np.spec.ports[0].nodePort >= 30000 && np.spec.ports[0].nodePort <= 32767);
  assert.equal(cluster.usage().nodePorts.used, 1);
});

test('kubernetes gets the first address, and comes back with it when deleted', () => {
  const cluster = new Cluster({ serviceClusterIpRange: '10.96.0.0/12', seed: 1 });
  assert.equal(cluster.kubernetesIp, '10.96.0.1');
  const kubernetes = () => cluster.get('svc', 'default').find((s) => s.metadata.name === 'kubernetes');
  assert.equal(kubernetes().spec.clusterIP, '10.96.0.1');
  cluster.apply(service('test'));
  const deleted = cluster.delete('Service', 'default', 'kubernetes');
  assert.equal(deleted.spec.clusterIP, '10.96.0.1');
  assert.equal(kubernetes().spec.clusterIP, '10.96.0.1');
  assert.deepEqual(cluster.delete('svc', undefined, 'test').metadata.name, 'test');
  assert.throws(() => cluster.delete('svc', 'default', 'test'), { message: 'services "test" not found' });
  assert.throws(() => cluster.get('frobs'), { message: 'the server doesn\'t have a resource type "frobs"' });
  assert.match(cluster.kubectl('kubectl get svc').text, /^NAME\s+TYPE\s+CLUSTER-IP\s+EXTERNAL-IP\s+PORT\(S\)\s+AGE\nkubernetes\s+ClusterIP\s+10\.96\.0\.1\s/);
  assert.match(cluster.kubectl('kubectl get svc -A').text, /^NAMESPACE\s+NAME/);
  assert.match(cluster.dnsZone(), /^kubernetes\.default\.svc\.cluster\.local\.\s+5\s+IN\s+A\s+10\.96\.0\.1$/m);
  assert.ok(cluster.dnsRecords().some((r) => r.type === 'A' && r.data === '10.96.0.1'));
});

test('snapshot and restore round-trip exactly, and allocation continues identically', () => {
  const cluster = new Cluster({ serviceClusterIpRange: '10.0.0.0/16', seed: 42, nodePortRange: '30000-30099' });
  for (let i = 0; i < 20; i++) cluster.apply(service(`s${i}`, i % 3 === 0 ? ', type: NodePort' : ''));
  const snapshot = cluster.snapshot();
  // The generator's state is above 2^53: a BigInt keeps it exact.
  assert.equal(typeof snapshot.rng.state, 'bigint');
  const fromObject = Cluster.restore(snapshot);
  const fromText = Cluster.restore(cluster.snapshotJson());
  assert.equal(fromObject.snapshotJson(), cluster.snapshotJson());
  assert.equal(fromText.snapshotJson(), cluster.snapshotJson());
  const next = [cluster, fromObject, fromText].map((c) => c.apply(service('next', ', type: NodePort'))[0].spec);
  assert.deepEqual(next[1], next[0]);
  assert.deepEqual(next[2], next[0]);
  assert.throws(() => Cluster.restore({}), (e) => e instanceof Error && e.message.startsWith('invalid snapshot: missing field'));
});

test('configuration errors are the core\'s messages', () => {
  // tests/vectors/clusterip-29-and-30.yaml, last step, records the native message.
  const steps = JSON.parse(readFileSync(path.join(nativeReportsDir, 'clusterip-29-and-30.json'), 'utf8')).steps;
  const native = steps.at(-1).error;
  assert.throws(() => new Cluster({ serviceClusterIpRange: '192.168.100.0/30' }), (e) => e instanceof Error && e.message === native);
  assert.throws(() => new Cluster({ serviceClusterIpRange: '10.0.0.0/24', nodePortRnage: '1-2' }), /unknown field `nodePortRnage`/);
  assert.equal(new Cluster({}).kubernetesIp, '10.96.0.1', 'every option has the core\'s default');
  assert.throws(
    () => new Cluster({ serviceClusterIpRange: '10.0.0.0/24', nodePortRange: '32767-30000' }),
    (e) => e.message.startsWith('--service-node-port-range: '),
  );
});

test('time moves by the milliseconds given, and leases expire', () => {
  const cluster = new Cluster({ serviceClusterIpRange: '10.0.0.0/24', apiservers: ['192.168.0.10:6443'] });
  assert.deepEqual(cluster.kubernetesEndpoints(), ['192.168.0.10:6443']);
  assert.deepEqual(cluster.heartbeat('192.168.0.11:6443', 5000), ['192.168.0.10:6443', '192.168.0.11:6443']);
  assert.equal(cluster.now, 5000);
  assert.deepEqual(cluster.advance(10000), ['192.168.0.11:6443']);
  assert.equal(cluster.now, 15000);
  assert.throws(() => cluster.advance(-1), /whole number of milliseconds/);
  assert.throws(() => cluster.heartbeat('192.168.0.11', 16000), { message: 'invalid apiserver address "192.168.0.11"' });
});

test('runVector throws for a vector it cannot read', () => {
  assert.throws(() => runVector('description: ['), (e) => e instanceof Error && e.message.startsWith('invalid vector: '));
});

test('ipvsadmSave is the text `ipvs-agent plan --format ipvsadm-save` prints for the same manifests', () => {
  // ipvs-agent/tests/golden/examples.ipvsadm-save is what the native agent
  // prints for `plan --manifests examples --node-name node-a` (checked by
  // ipvs-agent/tests/plan_cli.rs); the agent reads a directory in name order.
  const root = path.join(import.meta.dirname, '..', '..');
  const golden = readFileSync(path.join(root, 'ipvs-agent/tests/golden/examples.ipvsadm-save'), 'utf8');
  const cluster = new Cluster({ serviceClusterIpRange: '10.96.0.0/12' });
  for (const file of ['pods.yaml', 'services.yaml']) {
    cluster.apply(readFileSync(path.join(root, 'examples', file), 'utf8'));
  }
  assert.equal(cluster.ipvsadmSave('node-a'), golden);
  assert.match(cluster.ipvsadmList('node-a'), /^IP Virtual Server version 1\.2\.1 \(size=4096\)\n/);
});
