// Browser tests of the playground: Debian's Chromium, driven headless by
// playwright-core, against web/ served on localhost by this script, and
// against the file:// build (target/playground-offline/, written by
// `make playground-site`) opened straight from disk.
//
//   node run.mjs            (make browser-test builds and installs first)
//
// Prints one `ok`/`FAIL` line per test and ends with
// `browser: N passed, M failed`; exits non-zero when any failed.
// Screenshots go to target/browser/; one also to docs/playground.png when
// SVCNET_DOCS_SCREENSHOT=1.

import { chromium } from 'playwright-core';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { readFile, mkdir, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join, extname, resolve, dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import assert from 'node:assert/strict';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, '../..');
const WEB = join(ROOT, 'web');
const OFFLINE = join(ROOT, 'target/playground-offline');
const OFFLINE_URL = pathToFileURL(join(OFFLINE, 'index.html')).href;
const SHOTS = join(ROOT, 'target/browser');
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const require = createRequire(import.meta.url);
// The Node build of the same core: what the page must agree with.
const { Cluster } = require(join(ROOT, 'target/wasm/node/svcnet_wasm.js'));
const { encodeState } = await import(join(WEB, 'js/state.js'));

// ---- a static server for web/ --------------------------------------------------

const TYPES = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.css': 'text/css', '.wasm': 'application/wasm', '.png': 'image/png', '.json': 'application/json', '.ts': 'text/plain' };

function serve() {
  const server = createServer(async (req, res) => {
    const path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    const file = join(WEB, path.endsWith('/') ? `${path}index.html` : path);
    if (!file.startsWith(WEB)) { res.writeHead(403).end(); return; }
    try {
      const body = await readFile(file);
      res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream' }).end(body);
    } catch {
      res.writeHead(404).end('not found');
    }
  });
  return new Promise((ok) => server.listen(0, '127.0.0.1', () => ok(server)));
}

// ---- the harness -----------------------------------------------------------------

const results = [];
const problems = []; // console errors and page errors, from every page

async function test(name, fn) {
  const started = Date.now();
  try {
    await fn();
    results.push(true);
    console.log(`ok   ${name} (${Date.now() - started} ms)`);
  } catch (err) {
    results.push(false);
    console.log(`FAIL ${name}\n     ${String(err.stack ?? err).split('\n').slice(0, 6).join('\n     ')}`);
  }
}

let browser;
let base;

/** Opens the served site (or `at`, e.g. OFFLINE_URL) and waits for the core. */
async function openPage(hash = '', viewport = { width: 1366, height: 768 }, at = `${base}/`) {
  const context = await browser.newContext({ viewport, reducedMotion: 'reduce' });
  await context.grantPermissions(['clipboard-read', 'clipboard-write']).catch(() => {});
  const page = await context.newPage();
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console error on ${page.url()}: ${m.text()}`); });
  page.on('pageerror', (e) => problems.push(`page error on ${page.url()}: ${e.message}`));
  page.requests = [];
  page.on('request', (r) => page.requests.push(r.url()));
  await page.goto(`${at}${hash}`);
  await page.waitForSelector('body[data-ready="true"]', { timeout: 20000 });
  return page;
}

/** Types a command into the console and presses Enter; returns its output. */
async function kubectl(page, line) {
  const before = await page.locator('#console-output .entry').count();
  await page.fill('#console-input', line);
  await page.press('#console-input', 'Enter');
  await page.waitForFunction((n) => document.querySelectorAll('#console-output .entry').length > n, before);
  return page.locator('#console-output .entry').last().innerText();
}

/** Types `kubectl apply -f -`, pastes `manifest` in the box and applies
 * it with Ctrl+Enter (not a click: at 1366x768 the range map covers the
 * Apply button); returns the console's answer. */
async function apply(page, manifest) {
  await kubectl(page, 'kubectl apply -f -');
  await page.fill('#stdin-input', manifest);
  await page.press('#stdin-input', 'Control+Enter');
  await page.waitForSelector('#stdin-box', { state: 'hidden' });
  return page.locator('#console-output .entry').last().innerText();
}

async function tab(page, name) {
  await page.click(`#tab-${name}`);
  return page.locator(`#view-${name}`);
}

async function shot(page, name) {
  await page.screenshot({ path: join(SHOTS, `${name}.png`) });
}

/** The ClusterIP the core gives the n-th Service created after `kubernetes`. */
function coreClusterIps([cidr, seed], names, ports = [80]) {
  const c = Cluster.playground(cidr, BigInt(seed));
  return names.map((name) => {
    const [svc] = c.apply(JSON.stringify({ apiVersion: 'v1', kind: 'Service', metadata: { name }, spec: { selector: { app: name }, ports: ports.map((p) => ({ port: p, targetPort: p })) } }));
    return svc.spec.clusterIP;
  });
}

// ---- the tests ----------------------------------------------------------------------

async function main() {
  if (!existsSync(join(WEB, 'pkg/svcnet_wasm.js'))) throw new Error('web/pkg/ is missing: run make playground-site (or scripts/playground.sh prepare)');
  await rm(SHOTS, { recursive: true, force: true });
  await mkdir(SHOTS, { recursive: true });
  const server = await serve();
  base = `http://127.0.0.1:${server.address().port}`;
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    // playwright gives every launch a fresh profile (--user-data-dir) of its own.
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });

  await test('the page loads the core and starts on 10.96.0.0/12 with kubernetes on 10.96.0.1', async () => {
    const page = await openPage();
    const services = await page.locator('#view-services').innerText();
    assert.match(services, /kubernetes/);
    assert.equal(await page.locator('#view-services [data-service="kubernetes"] .cluster-ip').innerText(), '10.96.0.1');
    assert.equal(await page.locator('.range-ip[data-ip="10.96.0.1"]').count(), 1);
    assert.equal(await page.locator('#range-map .cells .cell').count(), 256, 'a /12 is drawn as 256 blocks');
    await shot(page, '01-start');
    await page.context().close();
  });

  await test('guided tour: Next runs each step in the console; Back rebuilds the cluster', async () => {
    const page = await openPage();
    await page.click('#tour-start');
    const step = () => page.locator('#tour-count').innerText();
    assert.match(await step(), /step 1 of 9/i);
    const first = await page.locator('#console-output').innerText();
    assert.match(first, /kubectl get svc\nNAME\s+TYPE\s+CLUSTER-IP\s+EXTERNAL-IP\s+PORT\(S\)\s+AGE\nkubernetes\s+ClusterIP\s+10\.96\.0\.1\s+<none>\s+443\/TCP/);
    assert.match(first, /kube-system\s+kube-dns\s+ClusterIP\s+10\.96\.0\.10\s+<none>\s+53\/UDP,53\/TCP,9153\/TCP/, 'kubeadm\'s kube-dns on the tenth address');
    assert.match(await page.locator('#tour-body').innerText(), /192\.168\.49\.2:6443 \(kubeadm's default port, 6443\)/);
    await page.click('#tour-next'); // create svc test
    const [expected] = coreClusterIps(['10.96.0.0/12', 0], ['test']);
    const testIp = await page.locator('#view-services [data-service="test"] .cluster-ip').innerText();
    assert.equal(testIp, expected, 'the tour\'s test Service has the core\'s ClusterIP for seed 0');
    assert.match(await page.locator('#console-output').innerText(), /service\/test created/);
    assert.match(await page.locator('#tour-body').innerText(), new RegExp(testIp.replace(/\./g, '\\.')));
    await shot(page, '02-tour-create-svc');
    await page.click('#tour-next'); // empty slices
    assert.match(await page.locator('#view-slices').innerText(), /no endpoints/);
    await page.click('#tour-next'); // delete kubernetes
    const out = await page.locator('#console-output').innerText();
    assert.match(out, /service "kubernetes" deleted/);
    assert.match(out, /kubectl get svc kubernetes\nNAME\s+TYPE\s+CLUSTER-IP\s+EXTERNAL-IP\s+PORT\(S\)\s+AGE\nkubernetes\s+ClusterIP\s+10\.96\.0\.1\s/);
    await page.click('#tour-next'); // deployment: endpoints appear
    const slices = await page.locator('#view-slices').innerText();
    assert.equal((slices.match(/\bready\b/g) ?? []).length >= 2, true, 'two ready endpoints');
    assert.match(await page.locator('#console-output').innerText(), /deployment\.apps\/test created/);
    await shot(page, '03-tour-endpoints');
    await page.click('#tour-next'); // ipvs + packet walk
    assert.match(await page.locator('#console-output').innerText(), new RegExp(`TCP  ${testIp.replace(/\./g, '\\.')}:80 rr`));
    await page.click('#walk-send');
    const hops = await page.locator('#walk-hops').innerText();
    assert.match(hops, new RegExp(`dst ${testIp.replace(/\./g, '\\.')}:80`));
    assert.match(hops, /dst 10\.244\.0\.\d+:80/, 'DNAT to a pod');
    assert.match(hops, new RegExp(`src ${testIp.replace(/\./g, '\\.')}:80 → dst 10\\.244\\.0\\.254`), 'the reply is rewritten back to the ClusterIP');
    await shot(page, '04-tour-packet-walk');
    await page.click('#tour-next'); // unready
    assert.match(await page.locator('#walk-stage').innerText(), /not ready/);
    assert.match(await page.locator('#view-walk .hint').first().innerText(), /^1 real server/);
    await page.click('#tour-next'); // selector-less + manual slice
    assert.match(await page.locator('#console-output').innerText(), /service\/external-db created\nendpointslice\.discovery\.k8s\.io\/external-db-1 created/);
    assert.match(await page.locator('#view-slices').innerText(), /192\.168\.10\.20/);
    await page.click('#tab-ipvs');
    assert.match(await page.locator('#ipvs-text').innerText(), /-> 192\.168\.10\.20:5432\s+Masq/);
    await page.click('#tour-back');
    assert.match(await step(), /step 7 of 9/i);
    assert.equal(await page.locator('#view-services [data-service="external-db"]').count(), 0, 'Back removed what step 8 created');
    assert.equal(await page.locator('#view-services [data-service="test"] .cluster-ip').innerText(), testIp, 'and kept the rest');
    await page.click('#tour-next');
    await page.click('#tour-next');
    assert.match(await step(), /step 9 of 9/i);
    assert.equal(await page.locator('#tour-next').innerText(), 'Finish');
    await shot(page, '05-tour-end');
    await page.context().close();
  });

  await test('guided tour: Close brings the user\'s cluster back; the browser\'s Back walks the tour back and stays on the page', async () => {
    const page = await openPage();
    const url = page.url().split('#')[0];
    assert.match(await kubectl(page, 'kubectl create svc clusterip mine --tcp=80'), /service\/mine created/);
    await page.click('#tour-start');
    assert.equal(await page.locator('#view-services [data-service="mine"]').count(), 0, 'the tour runs on a fresh cluster');
    await page.click('#tour-close');
    assert.equal(await page.locator('#tour').isHidden(), true);
    assert.equal(await page.locator('#view-services [data-service="mine"]').count(), 1, 'Close restored the user\'s Service');
    assert.match(await page.locator('#console-output').innerText(), /your cluster is back \(1 command on 10\.96\.0\.0\/12\)/);
    await page.waitForFunction(() => history.state?.tourStep === undefined, null, { timeout: 5000 });
    // Again, with the browser's Back this time.
    await page.click('#tour-start');
    await page.click('#tour-next');
    await page.click('#tour-next');
    assert.match(await page.locator('#tour-count').innerText(), /step 3 of/i);
    await page.evaluate(() => history.back());
    await page.waitForFunction(() => /step 2 of/i.test(document.querySelector('#tour-count').textContent));
    assert.equal(await page.locator('#view-services [data-service="test"]').count(), 1, 'step 2 created test');
    await page.evaluate(() => history.back());
    await page.waitForFunction(() => /step 1 of/i.test(document.querySelector('#tour-count').textContent));
    assert.equal(await page.locator('#view-services [data-service="test"]').count(), 0, 'Back to step 1 removed it');
    await page.evaluate(() => history.back());
    await page.waitForFunction(() => document.querySelector('#tour').hidden);
    assert.equal(page.url().split('#')[0], url, 'still on the playground');
    assert.equal(await page.locator('#view-services [data-service="mine"]').count(), 1, 'Back out of the tour restored the user\'s cluster');
    await page.context().close();
  });

  await test('claim 14: a Service created in the console shows its ClusterIP in the Services view, the range map and IPVS (a virtual server per ClusterIP:port, the address on kube-ipvs0), as the core computes it', async () => {
    const seed = 42;
    const page = await openPage();
    await page.fill('#seed-input', String(seed));
    await page.click('#cidr-form button[type="submit"]');
    assert.match(await kubectl(page, 'kubectl create svc clusterip web --tcp=80:8080'), /^kubectl create svc clusterip web --tcp=80:8080\nservice\/web created\nkubectl create service made the selector app=web from the name/, 'kubectl\'s line, then the note on where the selector came from');
    await kubectl(page, 'kubectl create svc nodeport shop --tcp=443');
    const [web, shop] = coreClusterIps(['10.96.0.0/12', seed], ['web', 'shop']);
    assert.equal(await page.locator('#view-services [data-service="web"] .cluster-ip').innerText(), web);
    assert.equal(await page.locator('#view-services [data-service="shop"] .cluster-ip').innerText(), shop);
    assert.equal(await page.locator(`.range-ip[data-ip="${web}"]`).count(), 1, 'web is listed on the range map');
    const block = page.locator('#range-map .cell.used.fresh');
    assert.equal(await block.count() >= 1, true, 'the newest allocation is highlighted on the map');
    await block.first().focus();
    assert.match(await page.locator('#range-detail-0').innerText(), new RegExp(`${shop.replace(/\./g, '\\.')} shop`));
    await tab(page, 'ipvs');
    const ipvs = await page.locator('#ipvs-text').innerText();
    assert.match(ipvs, new RegExp(`TCP  ${web.replace(/\./g, '\\.')}:80 rr`));
    assert.match(ipvs, /TCP  192\.168\.49\.2:3\d{4} rr/, 'the NodePort has a virtual server on the node IP');
    assert.match(await page.locator('#ipvs-addresses').innerText(), new RegExp(web.replace(/\./g, '\\.')));
    const get = await kubectl(page, 'kubectl get svc -o wide');
    assert.match(get, new RegExp(`web\\s+ClusterIP\\s+${web.replace(/\./g, '\\.')}\\s+<none>\\s+80/TCP\\s+\\d+s\\s+app=web`));
    await shot(page, '06-console-create');
    await page.context().close();
  });

  await test('claim 10: the first address of the range is kubernetes\'s; deleted, it comes back on the same address', async () => {
    const page = await openPage();
    await page.fill('#cidr-input', '10.100.0.0/16');
    await page.click('#cidr-form button[type="submit"]');
    const before = await page.locator('#view-services [data-service="kubernetes"] .cluster-ip').innerText();
    assert.equal(before, '10.100.0.1');
    assert.equal(await kubectl(page, 'kubectl delete svc kubernetes'), 'kubectl delete svc kubernetes\nservice "kubernetes" deleted');
    assert.equal(await page.locator('#view-services [data-service="kubernetes"] .cluster-ip').innerText(), before);
    assert.match(await kubectl(page, 'kubectl get svc kubernetes'), /kubernetes\s+ClusterIP\s+10\.100\.0\.1\s/);
    await page.context().close();
  });

  await test('claim 9: a service CIDR is validated as kube-apiserver validates it (too small, too big, over the pod network, not a CIDR) and the refusal is explained; bad objects get Kubernetes\' own errors', async () => {
    const page = await openPage();
    assert.match(await kubectl(page, 'kubectl create svc clusterip Bad_Name --tcp=80'), /The Service "Bad_Name" is invalid: metadata\.name: Invalid value: "Bad_Name"/);
    assert.match(await kubectl(page, 'kubectl delete svc nope'), /Error from server \(NotFound\): services "nope" not found/);
    await kubectl(page, 'kubectl create svc clusterip dup --tcp=80');
    assert.match(await kubectl(page, 'kubectl create svc clusterip dup --tcp=80'), /Error from server \(AlreadyExists\): services "dup" already exists/);
    assert.match(await kubectl(page, 'kubectl create svc clusterip p0 --tcp=0'), /The Service "p0" is invalid: \[spec\.ports\[0\]\.port: Invalid value: 0: must be between 1 and 65535, inclusive/);
    assert.match(await kubectl(page, 'kubectl get frobs'), /error: the server doesn't have a resource type "frobs"/);
    assert.match(await kubectl(page, 'kubectl create deployment x'), /error: required flag\(s\) "image" not set/);
    assert.equal(await page.locator('#console-output .err').count() >= 6, true);
    for (const [cidr, core, plain] of [
      ['10.96.0.0/30', /at least 8 IP addresses/, /Too small/],
      ['10.244.0.0/16', /overlaps the pod CIDR/, /pods use 10\.244\.0\.0\/16/],
      ['fd00:10:96::/48', /shortest allowed prefix length for service CIDR is 64/, /Too big/],
      ['banana', /service-cluster-ip-range\[0\] is not a valid cidr/, /not a CIDR/],
    ]) {
      await page.fill('#cidr-input', cidr);
      await page.press('#cidr-input', 'Enter');
      const box = page.locator('#cidr-error');
      await box.waitFor({ state: 'visible' });
      const text = await box.innerText();
      assert.match(text, core, `${cidr}: the core's message`);
      assert.match(text, plain, `${cidr}: in plain words`);
      assert.equal(await page.getAttribute('#cidr-input', 'aria-invalid'), 'true');
    }
    await shot(page, '07-bad-cidr');
    // The cluster in use is untouched by a refused range.
    assert.match(await kubectl(page, 'kubectl get svc dup'), /dup\s+ClusterIP\s+10\./);
    await page.context().close();
  });

  await test('claim 1: with no --service-cluster-ip-range the cluster starts on 10.0.0.0/24, and the page says why', async () => {
    const page = await openPage();
    await page.fill('#cidr-input', '');
    await page.press('#cidr-input', 'Enter');
    await page.waitForFunction(() => /falls back to 10\.0\.0\.0\/24/.test(document.querySelector('#console-output').textContent));
    assert.match(await kubectl(page, 'kubectl get svc kubernetes'), /kubernetes\s+ClusterIP\s+10\.0\.0\.1\s/);
    assert.match(await kubectl(page, 'kubectl get servicecidrs'), /kubernetes\s+10\.0\.0\.0\/24/);
    assert.equal(await page.locator('#range-map .cells .cell').count(), 256);
    await page.context().close();
  });

  await test('claim 2: one apiserver, three (HA) or a managed load balancer; a hand-written kubernetes slice is rewritten, and the console says why', async () => {
    const page = await openPage();
    assert.match(await kubectl(page, 'kubectl get endpointslices kubernetes'), /kubernetes\s+IPv4\s+6443\s+192\.168\.49\.2\s+\d+s$/);
    await page.selectOption('#control-plane', 'ha');
    await page.waitForFunction(() => window.playground.session.controlPlane === 'ha');
    assert.match(await kubectl(page, 'kubectl get endpointslices kubernetes'), /6443\s+192\.168\.49\.11,192\.168\.49\.12,192\.168\.49\.13/);
    const answer = await apply(page, 'apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {name: kubernetes, namespace: default, labels: {kubernetes.io/service-name: kubernetes}}\naddressType: IPv4\nports: [{name: https, port: 6443, protocol: TCP}]\nendpoints: [{addresses: [10.9.9.9]}]\n');
    assert.match(answer, /endpointslice\.discovery\.k8s\.io\/kubernetes configured/);
    assert.match(answer, /endpoint reconciler .* lists 192\.168\.49\.11:6443, 192\.168\.49\.12:6443, 192\.168\.49\.13:6443 again/);
    await page.selectOption('#control-plane', 'managed');
    await page.waitForFunction(() => window.playground.session.controlPlane === 'managed');
    assert.match(await kubectl(page, 'kubectl get endpoints kubernetes'), /kubernetes\s+172\.16\.0\.2:443/);
    await page.context().close();
  });

  await test('claim 3: kubectl exec POD -- env shows the Service variables the kubelet set when the pod started; a later Service is missing until a new pod starts', async () => {
    const page = await openPage();
    await kubectl(page, 'kubectl create svc clusterip early --tcp=80');
    await kubectl(page, 'kubectl create deployment web --image=nginx');
    await kubectl(page, 'kubectl create svc clusterip late --tcp=8080');
    const [old] = await page.evaluate(() => window.playground.session.podsOf('web'));
    const env = await kubectl(page, `kubectl exec ${old} -- env`);
    assert.match(env, /KUBERNETES_SERVICE_HOST=10\.96\.0\.1\nKUBERNETES_SERVICE_PORT=443/);
    assert.match(env, /EARLY_SERVICE_HOST=10\.\d+\.\d+\.\d+\nEARLY_SERVICE_PORT=80/);
    assert.doesNotMatch(env, /LATE_SERVICE_HOST/);
    assert.match(env, /Not here: late, created after the pod started/);
    await kubectl(page, 'kubectl scale deployment web --replicas=2');
    const newer = (await page.evaluate(() => window.playground.session.podsOf('web'))).find((p) => p !== old);
    const fresh = await kubectl(page, `kubectl exec ${newer} -- env`);
    assert.match(fresh, /\nLATE_SERVICE_PORT=8080\n/);
    assert.match(fresh, /\nLATE_PORT=tcp:\/\/10\.\d+\.\d+\.\d+:8080\n/);
    await page.context().close();
  });

  await test('kubectl describe, -o jsonpath and -o wide print what kubectl prints', async () => {
    const page = await openPage();
    await kubectl(page, 'kubectl create deployment web --image=nginx --replicas=2 --port=8080');
    await kubectl(page, 'kubectl expose deployment web --port=80 --target-port=8080');
    const described = await kubectl(page, 'kubectl describe svc web');
    assert.match(described, /Name:\s+web\nNamespace:\s+default\nLabels:\s+app=web\n/);
    assert.match(described, /Endpoints:\s+10\.244\.0\.4:8080,10\.244\.0\.5:8080\nSession Affinity:\s+None/);
    assert.match(await kubectl(page, 'kubectl describe endpointslice kubernetes'), /AddressType:\s+IPv4\nPorts:\n\s+Name\s+Port\s+Protocol/);
    assert.match(await kubectl(page, "kubectl get svc kubernetes -o jsonpath='{.spec.clusterIP}'"), /^kubectl get svc kubernetes -o jsonpath='\{\.spec\.clusterIP\}'\n10\.96\.0\.1$/);
    assert.match(await kubectl(page, 'kubectl get pods -o wide'), /IP\s+NODE\s+NOMINATED NODE\s+READINESS GATES\nweb-\w+-\w+\s+1\/1\s+Running\s+0\s+\d+s\s+10\.244\.0\.\d+\s+node-1/);
    await page.context().close();
  });

  await test('claim 4: kube-proxy lists and watches, keeps a cache, and its sync loop coalesces changes within --min-sync-period', async () => {
    // Commands at set times on the cluster's clock (a shared link keeps them).
    const history = [
      { line: 'kubectl create svc clusterip a --tcp=80', at: 5000 },
      { line: 'kubectl create svc clusterip b --tcp=80', at: 5200 },
      { line: 'kubectl delete svc a', at: 5400 },
      { line: 'kubectl get svc', at: 7000 },
    ];
    const page = await openPage(`#${encodeState({ cidr: '10.96.0.0/12', seed: 0, history })}`);
    const view = await tab(page, 'proxy');
    const syncs = await view.locator('table[aria-label="Syncs"] tbody').innerText();
    assert.match(syncs, /^0:06\.000\s+partial\s+4\s+\d+\n0:05\.000\s+partial\s+2\s+\d+\n0:00\.000\s+full\s+\d+\s+\d+$/, 'one sync at 5 s; the changes at 5.2 s and 5.4 s wait for the min sync period and go in one sync at 6 s');
    const events = await view.locator('table[aria-label="Watch events"] tbody').innerText();
    assert.match(events, /0:05\.400\s+DELETED\s+Service\s+default\/a\s+\d+/);
    assert.match(events, /0:05\.200\s+ADDED\s+Service\s+default\/b\s+\d+/);
    const cache = await view.locator('table[aria-label="kube-proxy cache"] tbody').innerText();
    assert.match(cache, /Service\s+default\/b\s/);
    assert.doesNotMatch(cache, /default\/a\s/);
    assert.match(await view.innerText(), /coalesced into one sync/);
    await page.context().close();
  });

  await test('claim 5: IPVS, iptables and nftables views, each saying whether an interface holds the ClusterIP; ip addr show kube-ipvs0 and iptables-save in the console', async () => {
    const page = await openPage();
    await kubectl(page, 'kubectl create deployment web --image=nginx --replicas=2 --port=80');
    await kubectl(page, 'kubectl expose deployment web --port=80');
    assert.match(await kubectl(page, 'ip addr show kube-ipvs0'), /kube-ipvs0: <BROADCAST,NOARP>[^]*inet 10\.96\.0\.1\/32 scope global kube-ipvs0/);
    assert.match(await kubectl(page, 'iptables-save'), /-A KUBE-SERVICES -d 10\.96\.0\.1\/32 -p tcp -m comment --comment "default\/kubernetes:https cluster IP" -m tcp --dport 443 -j KUBE-SVC-NPX46M4PTMTKRN6Y/);
    const view = await tab(page, 'ipvs');
    assert.match(await view.locator('#ipvs-where').innerText(), /an interface does hold it/);
    await view.locator('input[name="ipvs-mode"][value="iptables"]').check();
    assert.match(await page.locator('#ipvs-where').innerText(), /no interface holds the ClusterIP/);
    assert.match(await page.locator('#ipvs-text').innerText(), /-m statistic --mode random --probability 0\.50000000000 -j KUBE-SEP-/);
    await page.locator('input[name="ipvs-mode"][value="nft"]').check();
    assert.match(await page.locator('#ipvs-where').innerText(), /nftables mode: no interface holds the ClusterIP/);
    assert.match(await page.locator('#ipvs-text').innerText(), /^table ip kube-proxy \{[^]*10\.96\.0\.1 \. tcp \. 443 : goto service-2QRHZV4L-default\/kubernetes\/tcp\/https/);
    await page.locator('input[name="ipvs-mode"][value="svcnet"]').check();
    assert.match(await page.locator('#ipvs-text').innerText(), /^table inet svcnet \{/);
    await page.context().close();
  });

  await test('svcnet\'s nftables view: one Service\'s set elements highlighted, and under each rule what it is for', async () => {
    const page = await openPage();
    await kubectl(page, 'kubectl create deployment web --image=nginx --replicas=2 --port=80');
    await kubectl(page, 'kubectl expose deployment web --port=80 --type=NodePort');
    await tab(page, 'ipvs');
    await page.locator('input[name="ipvs-mode"][value="svcnet"]').check();
    assert.equal(await page.locator('#nft-service').inputValue(), 'default/web', 'a Service of the default namespace is picked');
    const mine = (await page.locator('#ipvs-text .nft-line.mine').allInnerTexts()).join('\n');
    assert.match(mine, /10\.244\.0\.4 \. tcp \. 80 \. 10\.244\.0\.4/, 'web\'s hairpin entries');
    assert.match(mine, /tcp \. 3\d{4}/, 'web\'s NodePort');
    assert.doesNotMatch(mine, /10\.96\.0\.10/, 'nothing of kube-dns');
    assert.match(await page.locator('#ipvs-text').innerText(), /@hairpin-v4 masquerade\n\s+# masquerade a pod reaching itself through its Service \(hairpin\)/);
    await page.selectOption('#nft-service', 'kube-system/kube-dns');
    const dns = (await page.locator('#ipvs-text .nft-line.mine').allInnerTexts()).join('\n');
    assert.match(dns, /10\.96\.0\.10 \. udp \. 53/);
    assert.doesNotMatch(dns, /10\.244\.0\.4/);
    await page.context().close();
  });

  await test('claim 6: Endpoints and EndpointSlices side by side, with the deprecation warning, the 1,000-address cap and one-way mirroring explained', async () => {
    const page = await openPage('', { width: 1440, height: 900 });
    await kubectl(page, 'kubectl create deployment web --image=nginx --replicas=2 --port=80');
    await kubectl(page, 'kubectl expose deployment web --port=80');
    await apply(page, 'apiVersion: v1\nkind: Service\nmetadata: {name: db}\nspec: {ports: [{port: 5432}]}\n---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {name: db-1, labels: {kubernetes.io/service-name: db}}\naddressType: IPv4\nports: [{port: 5432}]\nendpoints: [{addresses: [192.168.10.20]}]\n');
    const view = await tab(page, 'slices');
    const legacy = view.locator('section[aria-label="kubectl get endpoints"]');
    const slices = view.locator('section[aria-label="kubectl get endpointslices"]');
    const [a, b] = [await legacy.boundingBox(), await slices.boundingBox()];
    assert.ok(Math.abs(a.y - b.y) < 2 && b.x > a.x, 'the two tables sit side by side');
    const left = await legacy.innerText();
    assert.match(left, /Warning: v1 Endpoints is deprecated in v1\.33\+/);
    assert.match(left, /web\s+10\.244\.0\.4:80,10\.244\.0\.5:80/);
    assert.doesNotMatch(left, /\ndb\s/, 'a hand-written slice gets no Endpoints object');
    assert.match(await slices.innerText(), /db-1\s+IPv4\s+5432\s+192\.168\.10\.20/);
    const explain = await view.innerText();
    assert.match(explain, /at most 1,000 addresses/);
    assert.match(explain, /Mirroring goes one way/);
    assert.match(await kubectl(page, 'kubectl get endpoints db'), /Error from server \(NotFound\): endpoints "db" not found/);
    await page.context().close();
  });

  await test('claim 8: dual-stack: a preset, pods with an address of each family, a PreferDualStack Service with IPv6 slices, virtual servers and AAAA records', async () => {
    const page = await openPage();
    await page.click('[data-cidr="10.96.0.0/12,fd00:10:96::/108"]');
    await page.waitForFunction(() => document.querySelector('#cidr-input').value.includes(','));
    assert.match(await kubectl(page, 'kubectl create deployment web --image=nginx --replicas=2 --port=80'), /deployment\.apps\/web created/);
    const pod = await kubectl(page, 'kubectl get pods -o yaml');
    assert.match(pod, /- ip: 10\.244\.0\.\d+\n\s+- ip: fd00:10:244::/, 'each pod has an IPv4 and an IPv6 address');
    await apply(page, 'apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec:\n  ipFamilyPolicy: PreferDualStack\n  selector: {app: web}\n  ports: [{port: 80}]\n');
    const svc = await kubectl(page, 'kubectl get svc web -o yaml');
    assert.match(svc, /clusterIPs:\n\s+- 10\.\d+\.\d+\.\d+\n\s+- fd00:10:96::/);
    assert.match(await kubectl(page, 'kubectl get endpointslices'), /web-\w+\s+IPv6\s+80\s+fd00:10:244::/);
    assert.match(await kubectl(page, 'ipvsadm -Ln'), /TCP\s+\[fd00:10:96::[0-9a-f:]+\]:80 rr\n\s+-> \[fd00:10:244::/);
    assert.match(await (await tab(page, 'dns')).innerText(), /web\.default\.svc\.cluster\.local\.?\s+AAAA\s+fd00:10:96::/);
    await page.context().close();
  });

  await test('claim 7: kubectl expose copies the Deployment\'s selector; kubectl create service makes one from the name, and each says so', async () => {
    const page = await openPage();
    await kubectl(page, 'kubectl create deployment web --image=nginx --replicas=2 --port=8080');
    const exposed = await kubectl(page, 'kubectl expose deployment web --port=80 --target-port=8080');
    assert.match(exposed, /^kubectl expose deployment web --port=80 --target-port=8080\nservice\/web exposed\nkubectl expose copied the selector app=web from deployment web's spec\.selector/);
    const created = await kubectl(page, 'kubectl create service clusterip api --tcp=80:8080');
    assert.match(created, /service\/api created\nkubectl create service made the selector app=api from the name/);
    assert.match(await kubectl(page, 'kubectl get endpointslices -l kubernetes.io/service-name=web'), /web-\w+\s+IPv4\s+8080\s+10\.244\.0\.4,10\.244\.0\.5\s/, 'the exposed Service has the pods');
    assert.match(await kubectl(page, 'kubectl get endpointslices -l kubernetes.io/service-name=api'), /api-\w+\s+IPv4\s+<unset>\s+<unset>\s/, 'no pod carries app=api');
    assert.match(await kubectl(page, 'kubectl get svc api -o yaml'), /ports:\n  - name: 80-8080\n    port: 80/);
    await page.context().close();
  });

  await test('claim 11: dynamic ClusterIPs come from the upper band, a requested one from the lower static band, and a taken one is refused', async () => {
    const page = await openPage();
    await page.fill('#cidr-input', '10.96.0.0/24');
    await page.press('#cidr-input', 'Enter');
    await page.waitForFunction(() => document.querySelectorAll('#range-map .cells .cell').length === 256);
    await kubectl(page, 'kubectl create svc clusterip web --tcp=80');
    await apply(page, 'apiVersion: v1\nkind: Service\nmetadata: {name: fixed}\nspec: {clusterIP: 10.96.0.5, ports: [{port: 80}]}\n');
    const web = await page.locator('#view-services [data-service="web"] .cluster-ip').innerText();
    assert.ok(Number(web.split('.')[3]) >= 16, `${web} is in the dynamic band (past the first 16 addresses of a /24)`);
    assert.match(await page.locator(`#range-map .cell[data-from="${web}"]`).getAttribute('class'), /\bdynamic\b/);
    assert.match(await page.locator('#range-map .cell[data-from="10.96.0.5"]').getAttribute('class'), /\bstatic\b/);
    assert.match(await page.locator('#range-map').innerText(), /static/i);
    assert.match(await apply(page, 'apiVersion: v1\nkind: Service\nmetadata: {name: again}\nspec: {clusterIP: 10.96.0.5, ports: [{port: 80}]}\n'), /The Service "again" is invalid: spec\.clusterIPs: Invalid value: \["10\.96\.0\.5"\]: failed to allocate IP 10\.96\.0\.5: provided IP is already allocated/);
    await page.context().close();
  });

  await test('claim 13: pods matching a Service\'s selector become endpoints of its EndpointSlice, marked ready or not; a Service without a selector gets no slice', async () => {
    const page = await openPage();
    await kubectl(page, 'kubectl create deployment web --image=nginx --replicas=2 --port=80');
    await kubectl(page, 'kubectl expose deployment web --port=80');
    const pod = (await kubectl(page, 'kubectl get pods -l app=web -o name')).split('\n')[1].replace('pod/', '');
    assert.match(await kubectl(page, `simulate unready ${pod}`), /readiness probe failed/);
    const slice = (await kubectl(page, 'kubectl get endpointslices -l kubernetes.io/service-name=web -o name')).split('\n')[1].replace('endpointslice.discovery.k8s.io/', '');
    const described = await kubectl(page, `kubectl describe endpointslice ${slice}`);
    assert.match(described, /Conditions:\n\s+Ready:\s+false\n[^]*TargetRef:\s+Pod\//);
    assert.match(described, /Conditions:\n\s+Ready:\s+true/);
    const view = await tab(page, 'slices');
    assert.match(await view.innerText(), /not ready/);
    assert.match(await view.innerText(), /Every pod whose labels match a Service's selector becomes an endpoint/);
    await apply(page, 'apiVersion: v1\nkind: Service\nmetadata: {name: bare}\nspec: {ports: [{port: 80}]}\n');
    assert.equal(await kubectl(page, 'kubectl get endpointslices -l kubernetes.io/service-name=bare'), 'kubectl get endpointslices -l kubernetes.io/service-name=bare\nNo resources found in default namespace.');
    await page.context().close();
  });

  await test('claim 15: a NodePort comes from 30000-32767 and opens a virtual server on the node\'s address; a taken or out-of-range port is refused', async () => {
    const page = await openPage();
    await kubectl(page, 'kubectl create deployment web --image=nginx --replicas=1 --port=80');
    assert.match(await kubectl(page, 'kubectl expose deployment web --port=80 --type=NodePort'), /service\/web exposed/);
    const row = await kubectl(page, 'kubectl get svc web');
    const port = Number(/80:(\d+)\/TCP/.exec(row)[1]);
    assert.ok(port >= 30000 && port <= 32767, `${port} is in the NodePort range`);
    assert.match(await kubectl(page, 'ipvsadm -Ln'), new RegExp(`TCP  192\\.168\\.49\\.2:${port} rr\\n  -> 10\\.244\\.0\\.4:80`));
    assert.match(await kubectl(page, `kubectl create svc nodeport again --tcp=80 --node-port=${port}`), new RegExp(`spec\\.ports\\[0\\]\\.nodePort: Invalid value: ${port}: provided port is already allocated`));
    assert.match(await kubectl(page, 'kubectl create svc nodeport low --tcp=80 --node-port=20080'), /provided port is not in the valid range\. The range of valid ports is 30000-32767/);
    await page.context().close();
  });

  await test('claim 16: DNS: a Service name resolves to its ClusterIP, a headless one to its ready pods, an ExternalName to a CNAME; named ports get SRV records', async () => {
    const page = await openPage();
    await kubectl(page, 'kubectl create deployment db --image=postgres --replicas=2 --port=5432');
    await apply(page, 'apiVersion: v1\nkind: Service\nmetadata: {name: db}\nspec:\n  clusterIP: None\n  selector: {app: db}\n  ports: [{name: pg, port: 5432}]\n');
    assert.match(await kubectl(page, 'kubectl create svc externalname ext --external-name=example.com'), /service\/ext created\nAn ExternalName Service gets no ClusterIP/);
    await kubectl(page, 'kubectl create svc clusterip web --tcp=80');
    const web = await page.locator('#view-services [data-service="web"] .cluster-ip').innerText();
    const view = await tab(page, 'dns');
    const dns = await view.innerText();
    assert.match(dns, new RegExp(`web\\.default\\.svc\\.cluster\\.local\\.\\s+A\\s+${web.replace(/\./g, '\\.')}`));
    assert.match(dns, /db\.default\.svc\.cluster\.local\.\s+A\s+10\.244\.0\.4/);
    assert.match(dns, /db\.default\.svc\.cluster\.local\.\s+A\s+10\.244\.0\.5/);
    assert.match(dns, /_pg\._tcp\.db\.default\.svc\.cluster\.local\.\s+SRV\s+0 50 5432 10-244-0-4\.db\.default\.svc\.cluster\.local\./);
    assert.match(dns, /ext\.default\.svc\.cluster\.local\.\s+CNAME\s+example\.com\./);
    const pod = (await kubectl(page, 'kubectl get pods -l app=db -o name')).split('\n')[1].replace('pod/', '');
    await kubectl(page, `simulate unready ${pod}`);
    const after = await (await tab(page, 'dns')).innerText();
    assert.equal((after.match(/^db\.default\.svc\.cluster\.local\.\s+A\s/gm) ?? []).length, 1, 'the unready pod leaves the headless answer');
    await page.context().close();
  });

  await test('claim 18: what a cluster starts with: kubeadm\'s kube-dns on the tenth address with CoreDNS and the apiserver on 6443; minikube\'s apiserver on 8443; kind\'s node', async () => {
    const page = await openPage();
    assert.match(await kubectl(page, 'kubectl get svc -n kube-system'), /kube-dns\s+ClusterIP\s+10\.96\.0\.10\s+<none>\s+53\/UDP,53\/TCP,9153\/TCP/);
    assert.match(await kubectl(page, 'kubectl get pods -n kube-system'), /coredns-\w+-\w+\s+1\/1\s+Running[^]*\ncoredns-/);
    assert.match(await kubectl(page, 'kubectl get endpointslices kubernetes'), /kubernetes\s+IPv4\s+6443\s+192\.168\.49\.2\s/);
    await page.selectOption('#control-plane', 'minikube');
    await page.waitForFunction(() => window.playground.session.controlPlane === 'minikube');
    assert.match(await kubectl(page, 'kubectl get nodes'), /^kubectl get nodes\nNAME\s+STATUS\s+ROLES\s+AGE\s+VERSION\nminikube\s+Ready\s+control-plane/);
    assert.match(await kubectl(page, 'kubectl get endpointslices kubernetes'), /kubernetes\s+IPv4\s+8443\s+192\.168\.49\.2\s/);
    assert.equal((await kubectl(page, 'kubectl get pods -n kube-system -o name')).split('\n').length, 2, 'minikube runs one CoreDNS pod');
    await page.selectOption('#control-plane', 'kind');
    await page.waitForFunction(() => window.playground.session.controlPlane === 'kind');
    assert.match(await kubectl(page, 'kubectl get nodes -o wide'), /kind-control-plane\s+Ready\s+control-plane\s+\d+s\s+v1\.37\.2\s+172\.18\.0\.2\s/);
    assert.match(await kubectl(page, 'kubectl get endpointslices kubernetes'), /kubernetes\s+IPv4\s+6443\s+172\.18\.0\.2\s/);
    assert.match(await page.locator('#view-ipvs').evaluate((el) => el.closest('body').innerText), /kind-control-plane/);
    await page.context().close();
  });

  await test('claim 19: a targetPort may name a container port: each pod\'s own number is used, one EndpointSlice per set of ports', async () => {
    const page = await openPage();
    await apply(page, 'apiVersion: v1\nkind: Pod\nmetadata: {name: a, labels: {app: named}}\nspec: {containers: [{name: c, image: nginx, ports: [{name: http, containerPort: 8080}]}]}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: b, labels: {app: named}}\nspec: {containers: [{name: c, image: nginx, ports: [{name: http, containerPort: 9090}]}]}\n---\napiVersion: v1\nkind: Service\nmetadata: {name: named}\nspec: {selector: {app: named}, ports: [{port: 80, targetPort: http}]}\n');
    const slices = await kubectl(page, 'kubectl get endpointslices -l kubernetes.io/service-name=named');
    assert.match(slices, /named-\w+\s+IPv4\s+8080\s+10\.244\.0\.4\s/);
    assert.match(slices, /named-\w+\s+IPv4\s+9090\s+10\.244\.0\.5\s/);
    await tab(page, 'ipvs');
    const ipvs = await page.locator('#ipvs-text').innerText();
    assert.match(ipvs, /-> 10\.244\.0\.4:8080\s/);
    assert.match(ipvs, /-> 10\.244\.0\.5:9090\s/);
    await page.context().close();
  });

  await test('claim 12: a /29 is drawn address by address and fills up with kube-apiserver\'s error; a second ServiceCIDR makes room', async () => {
    const page = await openPage();
    await page.fill('#cidr-input', '10.96.0.0/29');
    await page.press('#cidr-input', 'Enter');
    assert.equal(await page.locator('#range-map .cells .cell').count(), 8);
    for (let i = 1; i <= 5; i++) assert.match(await kubectl(page, `kubectl create svc clusterip s${i} --tcp=80`), new RegExp(`service/s${i} created`));
    assert.match(await kubectl(page, 'kubectl create svc clusterip s6 --tcp=80'), /Error from server \(InternalError\): Internal error occurred: failed to allocate a serviceIP for Service "s6": range is full/);
    assert.equal(await page.locator('#range-map .cell.used').count(), 6);
    await shot(page, '08-range-29');
    await apply(page, 'apiVersion: networking.k8s.io/v1\nkind: ServiceCIDR\nmetadata: {name: extra}\nspec: {cidrs: [10.97.0.0/29]}\n');
    assert.match(await kubectl(page, 'kubectl get servicecidrs'), /extra\s+10\.97\.0\.0\/29\s+\d+s\nkubernetes\s+10\.96\.0\.0\/29\s/);
    assert.match(await kubectl(page, 'kubectl create svc clusterip s6 --tcp=80'), /service\/s6 created/);
    assert.match(await kubectl(page, 'kubectl get svc s6'), /s6\s+ClusterIP\s+10\.97\.0\.\d\s/, 'the new Service is on the added range');
    await page.context().close();
  });

  await test('range map: kubernetes in the legend\'s orange, the map one tab stop with arrow keys inside', async () => {
    const page = await openPage();
    await page.fill('#cidr-input', '10.96.0.0/24');
    await page.press('#cidr-input', 'Enter');
    await page.waitForFunction(() => document.querySelectorAll('#range-map .cells .cell').length === 256);
    assert.match(await kubectl(page, 'kubectl create svc clusterip web --tcp=80'), /service\/web created/);
    const k8s = page.locator('#range-map .cell.k8s');
    assert.equal(await k8s.count(), 1);
    assert.match(await k8s.getAttribute('class'), /\bstatic\b/, 'on a /24, 10.96.0.1 is in the static band');
    const [cellColour, legendColour] = await page.evaluate(() => {
      const legend = [...document.querySelectorAll('#range-map .legend span')].find((s) => /kubernetes/.test(s.textContent)).querySelector('i');
      return [getComputedStyle(document.querySelector('#range-map .cell.k8s')).backgroundColor, getComputedStyle(legend).backgroundColor];
    });
    assert.equal(cellColour, legendColour, 'the kubernetes cell has the legend\'s colour');
    const stops = await page.locator('#range-map .cells [tabindex="0"]').count();
    assert.equal(stops, 1, 'one tab stop in the map');
    await page.locator('#range-map .cell.k8s').focus();
    assert.match(await page.locator('#range-detail-0').innerText(), /10\.96\.0\.1: allocated to Service kubernetes/);
    await page.keyboard.press('ArrowRight');
    assert.match(await page.evaluate(() => document.activeElement.dataset.from), /^10\.96\.0\.2$/);
    assert.match(await page.locator('#range-detail-0').innerText(), /^10\.96\.0\.2: /);
    await page.keyboard.press('ArrowDown');
    assert.equal(await page.evaluate(() => document.activeElement.dataset.from), '10.96.0.18', 'a row is 16 cells');
    await page.keyboard.press('End');
    assert.equal(await page.evaluate(() => document.activeElement.dataset.from), '10.96.0.255');
    assert.equal(await page.locator('#range-map .cells [tabindex="0"]').count(), 1, 'still one tab stop: the cell last visited');
    // Tab leaves the map in one press.
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => !!document.activeElement.closest('#range-map .cells')), false, 'Tab leaves the map');
    await page.context().close();
  });

  await test('layout: the DNS table fits its panel at 1440 px; at 390 px the tour\'s buttons go under its text, the console stays on screen and no view scrolls sideways', async () => {
    const wide = await openPage('', { width: 1440, height: 900 });
    await kubectl(wide, 'kubectl create svc clusterip a-service-with-a-long-name --tcp=http:80');
    await wide.click('#tab-dns');
    const [tableWidth, viewWidth] = await wide.evaluate(() => [document.querySelector('#view-dns table').scrollWidth, document.querySelector('#view-dns').clientWidth]);
    assert.ok(tableWidth <= viewWidth, `DNS table ${tableWidth} px in a ${viewWidth} px view`);
    await shot(wide, '09-dns-1440');
    await wide.context().close();
    const phone = await openPage('', { width: 390, height: 844 });
    await phone.click('#tour-start');
    const text = await phone.locator('.tour-text').boundingBox();
    const nav = await phone.locator('.tour-nav').boundingBox();
    assert.ok(nav.y >= text.y + text.height - 1, 'the tour\'s buttons are under its text');
    assert.ok(text.width >= 300, `the tour text has the width (${text.width} px)`);
    const input = await phone.locator('#console-input').boundingBox();
    const output = await phone.locator('#console-output').boundingBox();
    assert.ok(output.y < 844, `the console starts on screen (at ${output.y} px)`);
    await shot(phone, '10-tour-390');
    assert.ok(input, 'the console input is laid out');
    const scrolls = () => phone.evaluate(() => document.documentElement.scrollWidth > window.innerWidth);
    assert.equal(await scrolls(), false, 'no horizontal scrolling at 390 px with the tour open');
    await phone.click('#tour-close');
    await kubectl(phone, 'kubectl create deployment web --image=nginx --replicas=2 --port=80');
    await kubectl(phone, 'kubectl expose deployment web --port=80 --type=NodePort');
    for (const name of ['services', 'slices', 'ipvs', 'dns', 'walk', 'proxy']) {
      await phone.click(`#tab-${name}`);
      assert.equal(await scrolls(), false, `no horizontal scrolling at 390 px on the ${name} view`);
    }
    await shot(phone, '11-views-390');
    await phone.context().close();
  });

  let shared;
  await test('the URL holds the scenario: opening it elsewhere rebuilds the same cluster', async () => {
    const page = await openPage();
    await page.fill('#seed-input', '7');
    await page.click('#cidr-form button[type="submit"]');
    await kubectl(page, 'kubectl create deployment api --image=nginx:1.27 --replicas=3');
    await kubectl(page, 'kubectl expose deployment api --port=80 --target-port=8080 --type=NodePort');
    await kubectl(page, 'kubectl scale deployment api --replicas=2');
    const ip = await page.locator('#view-services [data-service="api"] .cluster-ip').innerText();
    const pods = await kubectl(page, 'kubectl get pods -o wide');
    shared = page.url();
    assert.match(shared, /#s=/);
    const other = await openPage(new URL(shared).hash);
    assert.equal(await other.locator('#view-services [data-service="api"] .cluster-ip').innerText(), ip);
    assert.equal(await other.inputValue('#seed-input'), '7');
    // The same pods and addresses; AGE depends on when each page ran it.
    const noAge = (t) => t.replace(/(Running\s+\d+\s+)\S+/g, '$1<age>');
    assert.equal(noAge(await kubectl(other, 'kubectl get pods -o wide')), noAge(pods));
    assert.match(await other.locator('#console-output').innerText(), /Restored from the link: 4 command/);
    await page.context().close();
    await other.context().close();
  });

  await test('keyboard only: Tab to the console, type, Enter, history with arrows, Tab completion, apply -f - with Ctrl+Enter', async () => {
    const page = await openPage();
    await page.keyboard.press('Tab'); // the skip link
    await page.keyboard.press('Enter');
    let tries = 0;
    while ((await page.evaluate(() => document.activeElement?.id)) !== 'console-input' && tries++ < 40) await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'console-input');
    await page.keyboard.type('kubectl create svc clusterip kb --tcp=80');
    await page.keyboard.press('Enter');
    await page.keyboard.type('kubectl get svc kb');
    await page.keyboard.press('Enter');
    await page.keyboard.press('ArrowUp');
    assert.equal(await page.inputValue('#console-input'), 'kubectl get svc kb');
    await page.keyboard.press('ArrowUp');
    assert.equal(await page.inputValue('#console-input'), 'kubectl create svc clusterip kb --tcp=80');
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('ArrowDown');
    assert.equal(await page.inputValue('#console-input'), '');
    await page.keyboard.type('kubectl get endpointsl');
    await page.keyboard.press('Tab');
    assert.equal(await page.inputValue('#console-input'), 'kubectl get endpointslice');
    // Nothing more to add: a second Tab lists the candidates.
    await page.keyboard.press('Tab');
    assert.match(await page.locator('#console-output .entry').last().innerText(), /Tab: endpointslice  endpointslices/);
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'console-input');
    await page.keyboard.press('Control+A');
    await page.keyboard.press('Backspace');
    await page.keyboard.type('kubectl apply -f -');
    await page.keyboard.press('Enter');
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'stdin-input');
    await page.keyboard.insertText('apiVersion: v1\nkind: Service\nmetadata:\n  name: typed\nspec:\n  ports:\n  - port: 53\n    protocol: UDP\n');
    await page.keyboard.press('Control+Enter');
    assert.match(await page.locator('#console-output .entry').last().innerText(), /service\/typed created/);
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'console-input');
    // The views' tabs follow the WAI-ARIA pattern: arrows move between them.
    await page.focus('#tab-services');
    await page.keyboard.press('ArrowRight');
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'tab-slices');
    assert.equal(await page.isVisible('#view-slices'), true);
    assert.equal(await page.getAttribute('#console-output', 'aria-live'), 'polite');
    await page.context().close();
  });

  await test('claim 17: a packet\'s path: client, ClusterIP, IPVS picks a real server in turn, DNAT to the pod; a deleted or unready pod drops out', async () => {
    const page = await openPage();
    await kubectl(page, 'kubectl create deployment web --image=nginx --replicas=2');
    await kubectl(page, 'kubectl expose deployment web --port=80');
    await tab(page, 'walk');
    const backends = () => page.locator('#walk-backends .backend').evaluateAll((els) => els.map((e) => e.dataset.backend));
    const first = await backends();
    // CoreDNS holds .2 and .3 from the start, as on a kubeadm node.
    assert.deepEqual(first, ['10.244.0.4', '10.244.0.5']);
    await page.click('#walk-send');
    const a = await page.locator('#walk-hops').innerText();
    await page.click('#walk-send');
    const b = await page.locator('#walk-hops').innerText();
    assert.notEqual(a, b, 'round robin: two requests, two pods');
    await page.locator('#walk-backends .backend').first().getByRole('button', { name: 'Delete' }).click();
    assert.deepEqual(await backends(), ['10.244.0.5', '10.244.0.6'], 'the Deployment replaced the pod, with a new IP');
    await page.locator('#walk-backends .backend').first().getByRole('button', { name: 'Make unready' }).click();
    assert.match(await page.locator('#view-walk .hint').first().innerText(), /^1 real server/);
    for (let i = 0; i < 2; i++) {
      await page.click('#walk-send');
      assert.match(await page.locator('#walk-hops').innerText(), /dst 10\.244\.0\.6:80/);
    }
    await kubectl(page, 'kubectl scale deployment web --replicas=0');
    await page.click('#walk-send');
    assert.match(await page.locator('#walk-hops').innerText(), /no real servers/);
    await page.context().close();
  });

  await test('the packet walk shows the masquerade step where svcnet\'s table rewrites the source: a pod sent back to itself, an outside host through a NodePort', async () => {
    const page = await openPage();
    await kubectl(page, 'kubectl create deployment web --image=nginx --replicas=2 --port=8080');
    await kubectl(page, 'kubectl expose deployment web --port=80 --target-port=8080 --type=NodePort');
    await tab(page, 'walk');
    await page.click('#walk-send');
    assert.equal(await page.locator('#walk-hops li[data-kind="masquerade"]').count(), 0, 'a pod of the cluster keeps its address');
    await page.selectOption('#walk-client-kind', 'endpoint');
    assert.match(await page.locator('#walk-client').innerText(), /10\.244\.0\.4:43120/);
    await page.click('#walk-send');
    const hairpin = await page.locator('#walk-hops li[data-kind="masquerade"]').innerText();
    assert.match(hairpin, /src 10\.244\.0\.1:43120 → dst 10\.244\.0\.4:8080/, 'IPVS picked the client itself; the source becomes the node\'s bridge address');
    assert.match(hairpin, /@hairpin-v4 masquerade/);
    await page.click('#walk-send');
    assert.equal(await page.locator('#walk-hops li[data-kind="masquerade"]').count(), 0, 'the other pod: no hairpin');
    await page.selectOption('#walk-client-kind', 'outside');
    await page.click('#walk-send');
    const hops = await page.locator('#walk-hops').innerText();
    assert.match(hops, /The outside host sends a SYN: src 192\.168\.49\.1:43120 → dst 192\.168\.49\.2:3\d{4}/);
    assert.match(hops, /@node-ports-v4 jump mark-for-masquerade, then .*masquerade fully-random/);
    assert.match(hops, /reverses both rewrites/);
    await page.selectOption('#walk-service', 'kubernetes');
    assert.match(await page.locator('#walk-client').innerText(), /only a NodePort \(or LoadBalancer\) Service can be reached from outside the cluster/);
    assert.equal(await page.locator('#walk-send').isDisabled(), true);
    await page.context().close();
  });

  await test('kubectl get renders kubectl\'s tables and YAML', async () => {
    const page = await openPage();
    await kubectl(page, 'kubectl create deployment db --image=postgres --replicas=1 --port=5432');
    await kubectl(page, 'kubectl expose deployment db --port=5432');
    assert.match(await kubectl(page, 'kubectl get endpoints db'), /NAME\s+ENDPOINTS\s+AGE\ndb\s+10\.244\.0\.4:5432/);
    assert.match(await kubectl(page, 'kubectl get endpointslices'), /NAME\s+ADDRESSTYPE\s+PORTS\s+ENDPOINTS/);
    assert.match(await kubectl(page, 'kubectl get pods'), /NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\ndb-\w+-\w+\s+1\/1\s+Running\s+0\s+\d+s/);
    const yaml = await kubectl(page, 'kubectl get svc db -o yaml');
    assert.match(yaml, /apiVersion: v1\nkind: Service\nmetadata:/);
    assert.match(yaml, /clusterIP: 10\./);
    assert.match(await kubectl(page, 'kubectl get deployments'), /db\s+1\/1\s+1\s+1/);
    assert.match(await kubectl(page, 'help'), /kubectl create svc clusterip\|nodeport\|loadbalancer/);
    await page.context().close();
  });

  await test('screenshots at laptop sizes (1366x768, 1440x900)', async () => {
    const page = await openPage('', { width: 1440, height: 900 });
    await page.click('#tour-start');
    for (let i = 0; i < 5; i++) await page.click('#tour-next');
    await page.click('#walk-send');
    await page.waitForTimeout(550); // the second hop: IPVS rewrites the destination
    await shot(page, '09-laptop-1440x900');
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth);
    assert.equal(overflow, false, 'no horizontal scrolling at 1440x900');
    if (process.env.SVCNET_DOCS_SCREENSHOT === '1') {
      await page.screenshot({ path: join(ROOT, 'docs/playground.png') });
    }
    await page.setViewportSize({ width: 1366, height: 768 });
    await page.waitForTimeout(200);
    assert.equal(await page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth), false, 'no horizontal scrolling at 1366x768');
    await shot(page, '10-laptop-1366x768');
    await page.context().close();
  });

  // ---- the file:// build: target/playground-offline/ opened from disk, no server ----

  const offlineProblems = () => problems.filter((p) => p.includes(' on file://'));

  await test('file:// build: index.html opened from disk loads the core from one classic script, with nothing fetched', async () => {
    assert.equal(existsSync(join(OFFLINE, 'index.html')), true, `${OFFLINE}/index.html is missing: run make playground-site`);
    const page = await openPage('', undefined, OFFLINE_URL);
    assert.match(page.url(), /^file:\/\/\/.*\/playground-offline\/index\.html(#|$)/);
    assert.equal(await page.locator('script[type="module"]').count(), 0, 'no module scripts');
    assert.equal(await page.locator('#core-status').innerText(), 'Core loaded.');
    assert.equal(await page.locator('#view-services [data-service="kubernetes"] .cluster-ip').innerText(), '10.96.0.1');
    const style = await page.evaluate(() => getComputedStyle(document.querySelector('.layout')).display);
    assert.equal(style, 'grid', 'the stylesheet is loaded');
    const elsewhere = page.requests.filter((u) => !u.startsWith('file://') && !u.startsWith('data:'));
    assert.deepEqual(elsewhere, [], 'only files from disk');
    await shot(page, '11-offline-start');
    await page.context().close();
    assert.deepEqual(offlineProblems(), []);
  });

  await test('file:// build: a Service created in the console shows the same ClusterIP as the served site and the core', async () => {
    const seed = 42;
    const commands = ['kubectl create svc clusterip web --tcp=80:8080', 'kubectl create deployment api --image=nginx --replicas=2', 'kubectl expose deployment api --port=80 --type=NodePort'];
    const views = [];
    for (const at of [OFFLINE_URL, `${base}/`]) {
      const page = await openPage('', undefined, at);
      await page.fill('#seed-input', String(seed));
      await page.click('#cidr-form button[type="submit"]');
      assert.ok((await kubectl(page, commands[0])).startsWith(`${commands[0]}\nservice/web created\n`));
      for (const line of commands.slice(1)) await kubectl(page, line);
      views.push({
        web: await page.locator('#view-services [data-service="web"] .cluster-ip').innerText(),
        api: await page.locator('#view-services [data-service="api"] .cluster-ip').innerText(),
        services: await page.locator('#view-services').innerText(),
        pods: await kubectl(page, 'kubectl get pods -o wide'),
      });
      if (at === OFFLINE_URL) await shot(page, '12-offline-console');
      await page.context().close();
    }
    const [offline, served] = views;
    const [web, api] = coreClusterIps(['10.96.0.0/12', seed], ['web', 'api']);
    assert.equal(offline.web, web, 'web: the core\'s ClusterIP for seed 42');
    assert.equal(offline.api, api, 'api: the core\'s ClusterIP for seed 42');
    assert.deepEqual(offline, served, 'the file:// page shows what the served page shows');
    assert.deepEqual(offlineProblems(), []);
  });

  await test('file:// build: the guided tour\'s first steps run in the console', async () => {
    const page = await openPage('', undefined, OFFLINE_URL);
    await page.click('#tour-start');
    assert.match(await page.locator('#tour-count').innerText(), /step 1 of 9/i);
    assert.match(await page.locator('#console-output').innerText(), /kubectl get svc\nNAME\s+TYPE\s+CLUSTER-IP\s+EXTERNAL-IP\s+PORT\(S\)\s+AGE\nkubernetes\s+ClusterIP\s+10\.96\.0\.1\s+<none>\s+443\/TCP/);
    await page.click('#tour-next');
    assert.match(await page.locator('#tour-count').innerText(), /step 2 of 9/i);
    const [expected] = coreClusterIps(['10.96.0.0/12', 0], ['test']);
    assert.equal(await page.locator('#view-services [data-service="test"] .cluster-ip').innerText(), expected);
    assert.match(await page.locator('#console-output').innerText(), /service\/test created/);
    assert.match(page.url(), /#s=/, 'the address bar holds the scenario on file:// too');
    await shot(page, '13-offline-tour');
    await page.context().close();
    assert.deepEqual(offlineProblems(), []);
  });

  await test('user text stays text: <img onerror>, <svg onload> and <script> in names, labels, annotations, a slice, the console, the CIDR field and a shared link run nothing', async () => {
    // Each payload, if it ever ran, would count in window.__xss or open a
    // dialog. No quotes in them, so every message shows them unescaped.
    const payloads = ['<img src=x onerror=window.__xss=1>', '<svg onload=window.__xss=2>', '<script>window.__xss=3</script>', '<img src=x onerror=alert(4)>'];
    const [img, svg, script, alert] = payloads;
    const manifest = (object) => JSON.stringify(object);
    const service = (name, extra = {}) => manifest({ apiVersion: 'v1', kind: 'Service', metadata: { name, ...extra }, spec: { selector: { app: 'web' }, ports: [{ port: 80 }] } });
    const stdin = [
      // Accepted: annotation values are free text.
      service('xss-annotated', { annotations: { 'svcnet.io/note': img, 'svcnet.io/more': `${svg} ${script} ${alert}` } }),
      // Refused, each with an error that quotes the payload.
      service(img),
      service('xss-labelled', { labels: { app: svg } }),
      manifest({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'xss-selector' }, spec: { selector: { app: script }, ports: [{ port: 80 }] } }),
      // A slice written by hand: its endpoint's pod name and node are shown in the slices view.
      manifest({ apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', metadata: { name: 'xss-slice', labels: { 'kubernetes.io/service-name': 'xss-annotated' } }, addressType: 'IPv4', ports: [{ port: 80 }], endpoints: [{ addresses: ['192.168.10.30'], targetRef: { kind: 'Pod', name: img }, nodeName: svg }] }),
    ];
    const lines = [
      `kubectl create svc clusterip '${img}' --tcp=80`,
      `kubectl create deployment '${svg}' --image=nginx`,
      `kubectl create deployment web --image='${script}'`,
      `kubectl get svc '${alert}'`,
      img,
      `${script} ${svg}`,
      'kubectl get svc xss-annotated -o yaml',
      'kubectl get svc xss-annotated -o json',
      'kubectl get endpointslices -o wide',
    ];
    const dialogs = [];
    const pages = [];
    /** Nothing ran, no element came from the payloads, and the console shows them as text. */
    const assertInert = async (page, where) => {
      assert.equal(await page.evaluate(() => window.__xss), undefined, `${where}: a payload ran`);
      assert.deepEqual(dialogs, [], `${where}: a payload opened a dialog`);
      const planted = await page.evaluate(() => document.querySelectorAll('img, svg, [onerror], [onload], script:not([src])').length);
      assert.equal(planted, 0, `${where}: a payload became an element`);
    };
    const open = async (hash = '') => {
      const page = await openPage(hash);
      page.on('dialog', (d) => { dialogs.push(d.message()); d.dismiss().catch(() => {}); });
      pages.push(page);
      return page;
    };

    const page = await open();
    await assertInert(page, 'the page as loaded');
    for (const text of stdin) await apply(page, text);
    for (const line of lines) await kubectl(page, line);
    for (const name of ['services', 'slices', 'ipvs', 'dns', 'walk']) await tab(page, name);
    await assertInert(page, 'after the console and pastes');
    const out = await page.locator('#console-output').innerText();
    for (const p of payloads) assert.ok(out.includes(p), `the console shows ${p} as text:\n${out}`);
    assert.match(out, /service\/xss-annotated created/);
    assert.match(out, /metadata\.name: Invalid value: "<img src=x onerror=window\.__xss=1>"/, 'a payload as a name is refused, quoted');
    const slices = await page.locator('#view-slices').innerText();
    if (/endpointslice\.discovery\.k8s\.io\/xss-slice created/.test(out)) {
      assert.ok(slices.includes(`pod/${img}`) && slices.includes(svg), `the slices view shows the pod and node as text:\n${slices}`);
    }
    assert.equal(await page.locator('#view-services [data-service="xss-annotated"]').count(), 1);

    // The CIDR field: refused; the error box is written with innerHTML.
    await page.fill('#cidr-input', img);
    await page.click('#cidr-form button[type="submit"]');
    await page.waitForSelector('#cidr-error:not([hidden])');
    assert.match(await page.locator('#cidr-error').innerText(), /is not a valid cidr/);
    assert.equal(await page.inputValue('#cidr-input'), img);
    await assertInert(page, 'after the CIDR field');
    await shot(page, '14-xss-inert');

    // A shared link carrying the same commands, and one whose CIDR is a payload.
    const history = [...stdin.map((text) => ({ line: 'kubectl apply -f -', stdin: text })), ...lines.map((line) => ({ line }))];
    const linked = await open(`#${encodeState({ cidr: '10.96.0.0/12', seed: 0, history })}`);
    assert.match(await linked.locator('#console-output').innerText(), /Restored from the link/);
    for (const name of ['services', 'slices', 'ipvs', 'dns', 'walk']) await tab(linked, name);
    await assertInert(linked, 'a link with the payloads');
    const badCidr = await open(`#${encodeState({ cidr: script, seed: 0, history: [] })}`);
    assert.match(await badCidr.locator('#cidr-error').innerText(), /is not a valid cidr/);
    await assertInert(badCidr, 'a link whose CIDR is a payload');
    for (const p of pages) await p.context().close();
  });

  await test('no console errors or page errors on any page', async () => {
    assert.deepEqual(problems, []);
  });

  await browser.close();
  server.close();
  const passed = results.filter(Boolean).length;
  const failed = results.length - passed;
  console.log(`screenshots: ${SHOTS}/`);
  console.log(`browser: ${passed} passed, ${failed} failed`);
  process.exitCode = failed ? 1 : 0;
}

main().catch(async (err) => {
  console.log(`FAIL the browser tests could not run: ${err.stack ?? err}`);
  console.log(`browser: ${results.filter(Boolean).length} passed, ${results.filter((r) => !r).length + 1} failed`);
  await browser?.close().catch(() => {});
  process.exit(1);
});
