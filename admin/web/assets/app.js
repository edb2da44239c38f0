// The page's shell: hash routing (#/?q=…&sort=…, #/groups/<name>?tenant=T,
// #/topics), the node summary in the header, and polling of the admin API
// every POLL_MS while the tab is visible. When the API cannot be reached the
// last data stays on screen, dimmed, under a banner, and polling goes on:
// the page recovers by itself.

import { h, seconds, time } from './dom.js';
import * as overview from './overview.js';
import * as group from './group.js';
import * as topics from './topics.js';

const POLL_MS = 2000;
// A request taking longer than this counts as the API being unreachable.
const TIMEOUT_MS = 5000;
// An unchanged answer is drawn again after this long anyway, to move the
// "… ago" times on; in between, unchanged answers leave the DOM alone
// (a text selection survives).
const REDRAW_MS = 10000;

const viewEl = document.getElementById('view');
const bannerEl = document.getElementById('api-error');
const nodeEl = document.getElementById('node');

// the mounted page: {el, urls, update(results), title?, accept?}; accept
// lists the statuses with a JSON body that its urls answer with (404 if
// not given).
let view = null;
let inflight = null; // AbortController of the poll under way
let timer = null;
let lastKey = '';
let lastDraw = 0;
let lastOK = null; // Date of the last successful poll

// route reads the page to show from the location's hash.
function route() {
  const hash = location.hash.replace(/^#\/?/, '');
  const q = hash.indexOf('?');
  const path = (q < 0 ? hash : hash.slice(0, q)).split('/').filter(Boolean);
  const params = new URLSearchParams(q < 0 ? '' : hash.slice(q + 1));
  try {
    if (path.length === 0 || (path[0] === 'groups' && path.length === 1)) return { page: overview, nav: 'groups', params };
    if (path[0] === 'groups' && path.length === 2) {
      return { page: group, nav: 'groups', group: decodeURIComponent(path[1]), tenant: params.get('tenant') || '' };
    }
    if (path[0] === 'topics' && path.length === 1) return { page: topics, nav: 'topics' };
  } catch {
    // A malformed %-escape: fall through to "no such page".
  }
  return { page: null, nav: '' };
}

function mount() {
  const r = route();
  for (const a of document.querySelectorAll('[data-nav]')) {
    a.classList.toggle('active', a.dataset.nav === r.nav);
  }
  lastKey = '';
  if (!r.page) {
    view = null;
    document.title = 'Cohort';
    viewEl.replaceChildren(h('p', { class: 'empty' }, 'No such page. ', h('a', { href: '#/' }, 'Back to the groups')));
    return;
  }
  // refresh lets a page that changed what it asks for ask at once.
  view = r.page.mount({ ...r, refresh() { lastKey = ''; poll(); } });
  document.title = view.title ? `${view.title} · Cohort` : 'Cohort';
  viewEl.replaceChildren(view.el);
}

// get fetches one API path (relative to the page, so a path prefix in
// front of the page works). A status in accept with a JSON body is an
// answer (a 404: an unknown group; a group's 502 or 503: its coordinator
// did not answer, or there is none now), for the page to show; any other
// failure throws.
async function get(url, signal, accept = [404]) {
  const res = await fetch(withoutCredentials(url), { signal, cache: 'no-store', headers: { Accept: 'application/json' } });
  let body = null;
  try {
    body = await res.json();
  } catch {
    // Not JSON: judged by the status below.
  }
  if (res.ok || (accept.includes(res.status) && body)) return { status: res.status, body };
  throw new Error(`${url}: HTTP ${res.status}${body && body.error ? `: ${body.error}` : ''}`);
}

// withoutCredentials resolves a path against the page. A page opened as
// http://user:password@host/ (HTTP Basic) has them in its base URL, and
// fetch() refuses a URL with credentials; the browser has kept them for
// the origin and sends them with each request anyway.
function withoutCredentials(path) {
  const u = new URL(path, document.baseURI);
  u.username = '';
  u.password = '';
  return u.href;
}

async function poll() {
  clearTimeout(timer);
  if (inflight) inflight.abort();
  const ctl = new AbortController();
  inflight = ctl;
  let timedOut = false;
  const deadline = setTimeout(() => { timedOut = true; ctl.abort(); }, TIMEOUT_MS);
  const v = view;
  try {
    const [node, ...results] = await Promise.all(
      ['api/v1/node', ...(v ? v.urls : [])].map((u, i) => get(u, ctl.signal, i && v.accept ? v.accept : undefined)));
    if (inflight !== ctl) return;
    online(true);
    drawNode(node.body);
    const key = JSON.stringify(results.map((r) => r.body));
    if (v && (key !== lastKey || Date.now() - lastDraw > REDRAW_MS)) {
      lastKey = key;
      lastDraw = Date.now();
      v.update(results);
      if (v.title) document.title = `${v.title} · Cohort`;
    }
  } catch (err) {
    if (inflight !== ctl) return; // superseded by a newer poll
    online(false, timedOut ? `no answer within ${TIMEOUT_MS / 1000} s` : err.message);
  } finally {
    clearTimeout(deadline);
    if (inflight === ctl) {
      inflight = null;
      schedule();
    }
  }
}

function schedule() {
  clearTimeout(timer);
  if (!document.hidden) timer = setTimeout(poll, POLL_MS);
}

function online(ok, why) {
  viewEl.classList.toggle('stale', !ok);
  if (ok) {
    lastOK = new Date();
    bannerEl.hidden = true;
    bannerEl.replaceChildren();
    return;
  }
  bannerEl.replaceChildren(
    h('strong', {}, 'Cannot reach the Cohort API'), ` (${why}). `,
    lastOK ? `Showing data from ${time(lastOK.toISOString())}. ` : '',
    `Retrying every ${POLL_MS / 1000} s.`);
  bannerEl.hidden = false;
}

function drawNode(n) {
  // An organisation's member may not list topics (the API answers 403:
  // they are not scoped to organisations yet): no link to a page of errors.
  document.querySelector('[data-nav=topics]').hidden = Boolean(n.org);
  const held = n.mode === 'cluster' ? `shards ${(n.shards_held || []).length}/${n.shards_total}` : null;
  const parts = [
    n.version, // as the node gives it: "cohort 1.2.0 (go1.26.8 linux/amd64)"
    n.org && `organisation ${n.org}`,
    `node ${n.node_id}`,
    n.mode,
    n.store && n.store.kind,
    held,
    n.kafka_addr && `kafka ${n.kafka_addr}`,
    `up ${seconds(n.uptime_seconds)}`,
  ].filter(Boolean);
  nodeEl.replaceChildren(
    h('span', { title: n.started_at ? `started ${n.started_at}` : null }, parts.join(' · ')),
    h('span', { class: 'updated', title: 'last answer from the API' }, `updated ${time(lastOK.toISOString())}`));
}

window.addEventListener('hashchange', () => { mount(); poll(); });
document.addEventListener('visibilitychange', () => {
  if (document.hidden) clearTimeout(timer);
  else poll();
});
mount();
poll();
