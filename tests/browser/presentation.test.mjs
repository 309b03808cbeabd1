// web/js holds presentation only: every console line reaches the core's
// console unchanged, the page changes the cluster through nothing else,
// and no Kubernetes object or rule is written in JavaScript again.
// node --test presentation.test.mjs

import test from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const JS = join(ROOT, 'web/js');
const { Cluster } = createRequire(import.meta.url)(join(ROOT, 'target/wasm/node/svcnet_wasm.js'));
const { Session } = await import(join(JS, 'session.js'));

/** A Cluster whose methods record their calls. */
function spied(cluster) {
  const calls = [];
  return {
    calls,
    cluster: new Proxy(cluster, {
      get(target, name) {
        const value = target[name];
        if (typeof value !== 'function') return value;
        return (...args) => {
          calls.push([name, ...args]);
          return value.apply(target, args);
        };
      },
    }),
  };
}

test('every kubectl verb, ipvsadm and simulate go to the core\'s console as typed, and through nothing else', () => {
  const s = new Session(Cluster, { cidr: '10.96.0.0/12', seed: 0 });
  const spy = spied(s.cluster);
  s.cluster = spy.cluster;
  const lines = [
    'kubectl create deployment web --image=nginx --replicas=2',
    'kubectl create svc clusterip api --tcp=80:8080',
    'kubectl expose deployment web --port=80',
    'kubectl scale deployment web --replicas=3',
    'kubectl get pods -o wide',
    'kubectl delete svc api',
    'ipvsadm -Ln',
    'simulate unready nope',
    'kubectl frob',
  ];
  for (const line of lines) {
    spy.calls.length = 0;
    s.run(line);
    // The clock moves first (tick: time only), then the line goes to the console.
    assert.deepEqual(spy.calls.map((c) => c[0]), ['tick', 'kubectl'], `${line}: the clock, then kubectl`);
    assert.equal(spy.calls[1][1], line, `${line}: passed on unchanged`);
  }
  spy.calls.length = 0;
  const yaml = 'apiVersion: v1\nkind: Service\nmetadata: {name: b}\nspec: {ports: [{port: 53}]}\n';
  s.run('kubectl apply -f -', yaml);
  assert.deepEqual(spy.calls.slice(1), [['kubectl', 'kubectl apply -f -', yaml]]);
});

// Code that builds Kubernetes objects or applies Kubernetes rules. YAML in
// teaching text (`apiVersion: v1` inside a template string) is content and
// does not match: these look for JavaScript object keys and for calls.
const RULES = [
  [/\bapiVersion\s*:\s*['"`]/, 'builds a Kubernetes object (apiVersion as a JS key)'],
  [/[{,]\s*(selector|matchLabels|targetPort|clusterIP|podIPs?|containerPort|nodeName)\s*:/, 'writes a Kubernetes field as a JS key'],
  [/pod-template-hash|readyReplicas|SafeEncodeString/, 'plays a workload controller'],
  [/\.(apply|delete|heartbeat|advance)\s*\(/, 'changes the cluster other than through the console'],
  [/case\s+['"](create|expose|scale|get|apply|delete)['"]/, 'parses kubectl verbs'],
];

test('web/js builds no Kubernetes object and plays no controller', () => {
  const found = [];
  for (const file of readdirSync(JS).filter((f) => f.endsWith('.js'))) {
    readFileSync(join(JS, file), 'utf8').split('\n').forEach((text, i) => {
      const code = text.replace(/\/\/.*$/, '');
      for (const [pattern, why] of RULES) if (pattern.test(code)) found.push(`web/js/${file}:${i + 1}: ${why}: ${text.trim()}`);
    });
  }
  assert.deepEqual(found, []);
});

test('the guard sees a rule when one comes back', () => {
  const sample = "const svc = { apiVersion: 'v1', kind: 'Service', spec: { selector: { app } } };";
  assert.ok(RULES.some(([pattern]) => pattern.test(sample)));
  assert.ok(RULES.some(([pattern]) => pattern.test("this.cluster.delete('pod', 'default', victim);")));
});
