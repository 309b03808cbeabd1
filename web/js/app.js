// The playground page: loads the core (wasm), runs the console, keeps the
// views, the range map, the tour and the address bar in step.
//
// start() is called by one of two entry points, the page's only
// difference between them being where the wasm comes from:
//   main.js     the served site (<script type="module">): the wasm-bindgen
//               glue fetches pkg/svcnet_wasm_bg.wasm next to itself
//   offline.js  the file:// build (scripts/web-bundle/): bundled into one
//               classic script with the wasm's bytes inside it

import init, { Cluster } from '../pkg/svcnet_wasm.js';
import { Session, replay } from './session.js';
import { esc } from './format.js';
import { renderServices, renderSlices, renderIpvs, renderDns, renderKubeProxy } from './views.js';
import { renderRangeMap, rangeExplanation, allocations } from './rangemap.js';
import { renderWalk } from './walk.js';
import { STEPS, SELECTORLESS_EXAMPLE } from './tour.js';
import { explainCidrError } from './explain.js';
import { encodeState, decodeState } from './state.js';

const $ = (sel) => document.querySelector(sel);
const DEFAULT = { cidr: '10.96.0.0/12', seed: 0, controlPlane: 'single', history: [] };

const app = {
  session: null,
  /** Lines typed, for Up/Down. */
  typed: [],
  cursor: 0,
  draft: '',
  ipvsMode: 'list',
  /** The Service whose nftables set elements the svcnet view highlights. */
  nftService: null,
  knownIps: new Set(),
  tour: { active: false, step: -1, marks: [] },
};
window.playground = app; // for the browser tests and the curious

// ---- console output --------------------------------------------------------

function print(line, result, note) {
  const out = $('#console-output');
  const entry = document.createElement('div');
  entry.className = 'entry';
  if (line != null) {
    const cmd = document.createElement('div');
    cmd.className = 'cmd';
    cmd.textContent = line;
    entry.append(cmd);
  }
  if (result?.text) {
    const body = document.createElement('div');
    body.className = result.ok ? 'out' : 'err';
    body.textContent = result.text;
    entry.append(body);
  }
  if (result?.note) {
    const why = document.createElement('div');
    why.className = 'note';
    why.textContent = result.note;
    entry.append(why);
  }
  if (note) {
    const n = document.createElement('div');
    n.className = 'note';
    n.textContent = note;
    entry.append(n);
  }
  out.append(entry);
  out.scrollTop = out.scrollHeight;
}

/** Runs a command as if typed; the one way anything changes the cluster. */
function run(line, stdin = null) {
  const result = app.session.run(line, stdin);
  if (result.effect === 'clear') {
    $('#console-output').replaceChildren();
    return result;
  }
  const shown = stdin == null ? line : `${line} <<EOF\n${stdin.replace(/\n$/, '')}\nEOF`;
  print(shown, result);
  if (result.effect === 'readStdin') openStdin(line);
  refresh();
  return result;
}

// ---- state: session, URL -----------------------------------------------------

function startSession(state, { announce = true, note = null } = {}) {
  const { session, transcript } = replay(Cluster, state);
  app.session = session;
  app.knownIps = new Set(allocations(session.services()).map((a) => a.ip));
  $('#console-output').replaceChildren();
  $('#cidr-input').value = state.cidr;
  $('#seed-input').value = String(state.seed);
  $('#control-plane').value = state.controlPlane ?? 'single';
  if (announce) {
    print(null, null, `Cluster started: --service-cluster-ip-range=${state.cidr}, seed ${state.seed}. The kubernetes Service is on ${session.cluster.kubernetesIp}. Type help for the commands.`);
  }
  for (const warning of session.cluster.warnings) print(null, null, `kube-apiserver warns: ${warning}.`);
  if (note) print(null, null, note);
  for (const t of transcript) {
    const shown = t.stdin == null ? t.line : `${t.line} <<EOF\n${t.stdin.replace(/\n$/, '')}\nEOF`;
    print(shown, t.result);
  }
  refresh();
}

function currentState() {
  return app.session.state();
}

function saveUrl() {
  const hash = `#${encodeState(currentState())}`;
  // Keep the entry's state (the tour's step): only the address changes.
  if (location.hash !== hash) history.replaceState(history.state, '', hash);
}

// ---- views -----------------------------------------------------------------

function refresh() {
  const s = app.session;
  const usage = s.cluster.usage();
  const services = s.cluster.get('services');
  const ips = allocations(services).map((a) => a.ip);
  const fresh = new Set(ips.filter((ip) => !app.knownIps.has(ip)));
  app.knownIps = new Set(ips);
  renderRangeMap($('#range-map'), usage, services, fresh);
  $('#range-explain').textContent = rangeExplanation(usage);
  const counts = {
    services: renderServices($('#view-services'), s, usage),
    slices: renderSlices($('#view-slices'), s),
    ipvs: renderIpvs($('#view-ipvs'), s, app.ipvsMode, app.nftService),
    dns: renderDns($('#view-dns'), s),
    proxy: renderKubeProxy($('#view-proxy'), s),
  };
  renderWalk($('#view-walk'), s, (cmd) => { run(cmd); });
  for (const [k, n] of Object.entries(counts)) {
    const tab = $(`#tab-${k}`);
    tab.querySelector('.count')?.remove();
    const c = document.createElement('span');
    c.className = 'count';
    c.textContent = String(n);
    c.setAttribute('aria-hidden', 'true');
    tab.append(c);
    tab.setAttribute('aria-label', `${tab.firstChild.textContent.trim()} (${n})`);
  }
  for (const r of document.querySelectorAll('input[name="ipvs-mode"]')) {
    r.addEventListener('change', () => { app.ipvsMode = r.value; refresh(); document.querySelector(`input[name="ipvs-mode"][value="${r.value}"]`).focus(); });
  }
  $('#nft-service')?.addEventListener('change', (e) => { app.nftService = e.target.value; refresh(); $('#nft-service').focus(); });
  saveUrl();
}

// ---- tabs (WAI-ARIA tabs pattern) -------------------------------------------

function selectTab(tab, focus = false) {
  for (const t of document.querySelectorAll('[role="tab"]')) {
    const on = t === tab;
    t.setAttribute('aria-selected', String(on));
    t.tabIndex = on ? 0 : -1;
    $(`#${t.getAttribute('aria-controls')}`).hidden = !on;
  }
  if (focus) tab.focus();
}

function setupTabs() {
  const tabs = [...document.querySelectorAll('[role="tab"]')];
  for (const t of tabs) {
    t.addEventListener('click', () => selectTab(t));
    t.addEventListener('keydown', (e) => {
      const i = tabs.indexOf(t);
      const go = { ArrowRight: i + 1, ArrowLeft: i - 1, Home: 0, End: tabs.length - 1 }[e.key];
      if (go === undefined) return;
      e.preventDefault();
      selectTab(tabs[(go + tabs.length) % tabs.length], true);
    });
  }
}

// ---- the prompt --------------------------------------------------------------

function complete(input) {
  const before = input.value.slice(0, input.selectionStart);
  const word = /(\S*)$/.exec(before)[1];
  if (!word) return false;
  const options = app.session.cluster.vocabulary().filter((v) => v.startsWith(word));
  if (options.length === 0) return false;
  let common = options[0];
  for (const o of options) while (!o.startsWith(common)) common = common.slice(0, -1);
  const add = options.length === 1 ? options[0] + (options[0].endsWith('=') ? '' : ' ') : common;
  if (add.length > word.length) {
    input.setRangeText(add.slice(word.length), input.selectionStart, input.selectionStart, 'end');
    return false;
  }
  // No letter to add: list the candidates once, as a shell does on a second
  // Tab; another Tab on the same line then leaves the console as usual.
  if (app.listedFor === input.value) return false;
  app.listedFor = input.value;
  print(null, null, `Tab: ${options.join('  ')}`);
  return true;
}

function setupConsole() {
  const input = $('#console-input');
  $('#console-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const line = input.value;
    if (!line.trim()) return;
    app.typed.push(line);
    app.cursor = app.typed.length;
    input.value = '';
    run(line);
  });
  input.addEventListener('keydown', (e) => {
    if (e.key === 'ArrowUp') {
      if (app.cursor === app.typed.length) app.draft = input.value;
      if (app.cursor > 0) app.cursor--;
      input.value = app.typed[app.cursor] ?? app.draft;
      e.preventDefault();
    } else if (e.key === 'ArrowDown') {
      if (app.cursor < app.typed.length) app.cursor++;
      input.value = app.cursor === app.typed.length ? app.draft : app.typed[app.cursor];
      e.preventDefault();
    } else if (e.key === 'Tab' && input.value.trim() && !e.shiftKey) {
      const before = input.value;
      const listed = complete(input);
      if (listed || input.value !== before) e.preventDefault();
    } else if (e.key === 'l' && e.ctrlKey) {
      e.preventDefault();
      $('#console-output').replaceChildren();
    }
  });
  const ta = $('#stdin-input');
  $('#stdin-apply').addEventListener('click', applyStdin);
  $('#stdin-cancel').addEventListener('click', closeStdin);
  $('#stdin-example').addEventListener('click', () => { ta.value = SELECTORLESS_EXAMPLE; ta.focus(); });
  ta.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) { e.preventDefault(); applyStdin(); }
    if (e.key === 'Escape') { e.preventDefault(); closeStdin(); }
  });
}

let stdinLine = 'kubectl apply -f -';
function openStdin(line) {
  stdinLine = line;
  $('#stdin-box').hidden = false;
  $('#stdin-input').focus();
}
function closeStdin() {
  $('#stdin-box').hidden = true;
  $('#console-input').focus();
}
function applyStdin() {
  const text = $('#stdin-input').value;
  if (!text.trim()) return;
  $('#stdin-box').hidden = true;
  $('#stdin-input').value = '';
  // The prompt line was printed already; print the YAML run as one entry.
  $('#console-output').lastElementChild?.remove();
  run(stdinLine, text);
  $('#console-input').focus();
}

// ---- CIDR chooser ---------------------------------------------------------------

function showCidrError(message) {
  const box = $('#cidr-error');
  const input = $('#cidr-input');
  if (!message) {
    box.hidden = true;
    input.removeAttribute('aria-invalid');
    return;
  }
  box.innerHTML = `<code>${esc(message)}</code>${esc(explainCidrError(message))}`;
  box.hidden = false;
  input.setAttribute('aria-invalid', 'true');
}

function setupCidr() {
  const form = $('#cidr-form');
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const cidr = $('#cidr-input').value.trim();
    const seedText = $('#seed-input').value.trim() || '0';
    if (!/^\d+$/.test(seedText) || !Number.isSafeInteger(Number(seedText))) {
      showCidrError(`seed ${JSON.stringify(seedText)}: the seed must be a whole number from 0 to 9007199254740991`);
      return;
    }
    const state = { cidr, seed: Number(seedText), controlPlane: $('#control-plane').value, history: app.session?.history ?? [] };
    try {
      startSession(state, { note: state.history.length ? `Replaying your ${state.history.length} command(s) on the new range:` : null });
      showCidrError(null);
    } catch (err) {
      showCidrError(String(err.message ?? err));
      $('#cidr-input').focus();
    }
  });
  $('#control-plane').addEventListener('change', () => form.requestSubmit());
  for (const b of document.querySelectorAll('[data-cidr]')) {
    b.addEventListener('click', () => { $('#cidr-input').value = b.dataset.cidr; form.requestSubmit(); });
  }
}

// ---- tour ---------------------------------------------------------------------

function showStep() {
  const t = app.tour;
  const step = STEPS[t.step];
  $('#tour').hidden = false;
  $('#tour-count').textContent = `Guided tour · step ${t.step + 1} of ${STEPS.length}`;
  $('#tour-title').textContent = step.title;
  $('#tour-body').innerHTML = step.body(app.session);
  $('#tour-back').disabled = t.step === 0;
  $('#tour-next').textContent = t.step === STEPS.length - 1 ? 'Finish' : 'Next';
  const tab = { services: '#tab-services', slices: '#tab-slices', ipvs: '#tab-ipvs', dns: '#tab-dns', walk: '#tab-walk', proxy: '#tab-proxy' }[step.view];
  if (tab) selectTab($(tab));
}

function runStep(i) {
  const t = app.tour;
  t.step = i;
  t.marks[i] = app.session.history.length;
  for (const c of STEPS[i].commands(app.session)) {
    if (typeof c === 'string') run(c);
    else run(c.line, c.stdin);
  }
  showStep();
}

/**
 * The tour starts a fresh cluster; the user's own (`saved`) comes back on
 * Close, or when the browser's Back leaves the tour's first step. Each Next
 * pushes a history entry (state `{ tourStep, depth }`: the step shown, and
 * how many tour entries lead to it), so the browser's Back walks the tour
 * back and never leaves the page.
 */
function startTour() {
  const saved = currentState();
  pushTourEntry(0, true);
  app.tour = { active: true, step: -1, marks: [], saved };
  startSession({ ...DEFAULT, history: [] });
  showCidrError(null);
  runStep(0);
  $('#tour-next').focus();
}

/**
 * A new history entry for `step`, pushed before the step runs: the address
 * the step's commands write (saveUrl) goes into the new entry, and the one
 * before keeps the cluster as it was.
 */
function pushTourEntry(step, first = false) {
  const depth = first ? 1 : (history.state?.depth ?? 0) + 1;
  history.pushState({ tourStep: step, depth }, '', location.href);
}

/** Rebuilds the cluster as it was before the current step; shows the one before. */
function tourStepBack() {
  const t = app.tour;
  const keep = app.session.history.slice(0, t.marks[t.step]);
  startSession(app.session.state(keep), { announce: true });
  t.step--;
  showStep();
}

/** Ends the tour; `restore`: the user's cluster from before it comes back. */
function endTour({ restore }) {
  const t = app.tour;
  if (!t.active) return;
  t.active = false;
  $('#tour').hidden = true;
  if (!restore) return;
  const saved = t.saved;
  const commands = saved.history.length;
  startSession(saved, { note: `Tour closed: your cluster is back (${commands} command${commands === 1 ? '' : 's'} on ${saved.cidr}).` });
  // Drop the tour's history entries: Back goes where it went before the tour.
  const depth = history.state?.depth;
  if (depth > 0) history.go(-depth);
}

function onPopState(ev) {
  const t = app.tour;
  if (!t.active) return;
  const want = ev.state?.tourStep;
  if (want === undefined) {
    // Back from the first step: out of the tour, with the user's cluster.
    endTour({ restore: true });
    $('#tour-start').focus();
    return;
  }
  while (t.step > want && t.step > 0) tourStepBack();
  while (t.step < want && t.step < STEPS.length - 1) runStep(t.step + 1);
}

function setupTour() {
  $('#tour-start').addEventListener('click', startTour);
  $('#tour-next').addEventListener('click', () => {
    const t = app.tour;
    if (t.step >= STEPS.length - 1) { endTour({ restore: false }); $('#console-input').focus(); return; }
    pushTourEntry(t.step + 1);
    runStep(t.step + 1);
    $('#tour-next').focus();
  });
  $('#tour-back').addEventListener('click', () => {
    const t = app.tour;
    if (t.step <= 0) return;
    // Rebuild the cluster from the commands run before the current step's
    // start, then show the previous step as it was after its commands. The
    // history entry now holds that step (the browser's Back goes on from it).
    tourStepBack();
    history.replaceState({ ...history.state, tourStep: t.step }, '', location.href);
    saveUrl();
    $('#tour-back').disabled ? $('#tour-next').focus() : $('#tour-back').focus();
  });
  $('#tour-close').addEventListener('click', () => { endTour({ restore: true }); $('#tour-start').focus(); });
  window.addEventListener('popstate', onPopState);
}

// ---- share, reset ----------------------------------------------------------------

function setupActions() {
  $('#share').addEventListener('click', async () => {
    saveUrl();
    const status = $('#share-status');
    try {
      await navigator.clipboard.writeText(location.href);
      status.textContent = 'Link copied: it rebuilds this cluster.';
    } catch {
      status.textContent = 'The address bar holds the link to this cluster.';
    }
    setTimeout(() => { status.textContent = ''; }, 4000);
  });
  $('#reset').addEventListener('click', () => {
    startSession(app.session.state([]));
    $('#console-input').focus();
  });
  window.addEventListener('hashchange', () => {
    const state = decodeState(location.hash.slice(1));
    if (state && JSON.stringify(state) !== JSON.stringify(currentState())) startSession(state);
  });
}

// ---- boot --------------------------------------------------------------------------

async function main(core) {
  await init(core);
  setupTabs();
  setupConsole();
  setupCidr();
  setupTour();
  setupActions();
  let state = location.hash.length > 1 ? decodeState(location.hash.slice(1)) : null;
  let restored = false;
  if (state) {
    try {
      startSession(state, { note: `Restored from the link: ${state.history.length} command(s) on ${state.cidr}, replayed below.` });
      restored = true;
    } catch (err) {
      showCidrError(String(err.message ?? err));
      state = null;
    }
  }
  if (!restored) startSession({ ...DEFAULT });
  $('#core-status').textContent = 'Core loaded.';
  document.body.dataset.ready = 'true';
}

/**
 * Loads the core and starts the page. `core` is what the wasm-bindgen glue's
 * init takes: nothing (fetch the .wasm beside the glue) or
 * `{ module_or_path: bytes }`.
 */
export function start(core) {
  return main(core).catch((err) => {
    $('#core-status').textContent = `The core failed to load: ${err.message ?? err}`;
    throw err;
  });
}

