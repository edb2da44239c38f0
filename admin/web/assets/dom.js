// DOM building and formatting. Data reaches the page only through h()
// and svg(): strings become text nodes or attribute values, never markup,
// so a group named "<b>" shows as <b>.

// h creates an HTML element: attrs are attributes (null, undefined and
// false are left out; on* keys add event listeners), children are nodes or
// strings (arrays are flattened; null, undefined and false skipped).
export function h(tag, attrs, ...children) {
  return build(document.createElement(tag), attrs, children);
}

const SVG = 'http://www.w3.org/2000/svg';

// svg creates an SVG element the same way.
export function svg(tag, attrs, ...children) {
  return build(document.createElementNS(SVG, tag), attrs, children);
}

function build(el, attrs, children) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

// folded is a <details> whose open state outlives a redraw: opened holds
// the keys of those a person opened. A summary's click comes before the
// toggle event, a task of its own, so the new state is noted at the click
// too: a redraw in between (a poll, a filter) does not close what was
// just opened.
export function folded(opened, key, attrs, summary, ...body) {
  const note = (open) => { if (open) opened.add(key); else opened.delete(key); };
  return h('details', { ...attrs, open: opened.has(key), ontoggle: (e) => note(e.target.open) },
    h('summary', { onclick: (e) => note(!e.currentTarget.parentElement.open) }, summary),
    ...body);
}

const ints = new Intl.NumberFormat('en-US');

// int formats a count with thousands separators; missing values as a dash.
export function int(n) {
  return n === null || n === undefined ? '—' : ints.format(n);
}

// offset formats a log offset; -1 (unknown on this node: another node
// leads the partition) as a dash.
export function offset(n) {
  return n === null || n === undefined || n < 0 ? '—' : ints.format(n);
}

// plural writes a count and its noun: 1 partition, 2 partitions.
export function plural(n, noun) {
  return `${int(n)} ${noun}${n === 1 ? '' : 's'}`;
}

// seconds formats a duration in seconds as the two largest units.
export function seconds(s) {
  if (s === null || s === undefined) return '—';
  s = Math.max(0, Math.round(s));
  if (s < 60) return `${s} s`;
  const d = Math.floor(s / 86400), hr = Math.floor((s % 86400) / 3600);
  const m = Math.floor((s % 3600) / 60), r = s % 60;
  if (d) return `${d} d ${hr} h`;
  if (hr) return `${hr} h ${m} min`;
  return r ? `${m} min ${r} s` : `${m} min`;
}

// ms formats a duration in milliseconds.
export function ms(v) {
  if (v === null || v === undefined) return '—';
  if (v < 10) return `${Number(v.toFixed(1))} ms`;
  if (v < 1000) return `${Math.round(v)} ms`;
  if (v < 60000) return `${(v / 1000).toFixed(1)} s`;
  return seconds(v / 1000);
}

// time formats an RFC 3339 timestamp as local wall-clock time.
export function time(iso) {
  const t = new Date(iso);
  return isNaN(t) ? '—' : t.toLocaleTimeString([], { hour12: false });
}

// ago formats how long before now an RFC 3339 timestamp was.
export function ago(iso) {
  const t = Date.parse(iso);
  return isNaN(t) ? '' : `${seconds((Date.now() - t) / 1000)} ago`;
}

// ranges writes sorted partition numbers compactly: [0,1,2,5] → "0–2, 5".
export function ranges(ps) {
  const s = [...ps].sort((a, b) => a - b);
  const out = [];
  for (let i = 0; i < s.length; ) {
    let j = i;
    while (j + 1 < s.length && s[j + 1] === s[j] + 1) j++;
    out.push(j > i ? `${s[i]}–${s[j]}` : `${s[i]}`);
    i = j + 1;
  }
  return out.join(', ');
}

// What each lag status means, shown as the badge's tooltip.
const statusHelp = {
  OK: 'Consuming: commits advance and lag is not growing',
  WARN: 'Lag is growing',
  ERR: 'Some partition has stopped or stalled',
  STOP: 'Commits stopped while there is lag',
  STALL: 'Commits repeat the same offset while there is lag',
  '': 'Not enough lag samples yet',
};

// status is a lag status badge.
export function status(s) {
  s = s || '';
  return h('span', {
    class: `badge status-${s ? s.toLowerCase() : 'none'}`,
    title: statusHelp[s] ?? s,
    'data-testid': 'status',
    'data-status': s,
  }, s || '…');
}

// Where a config's value is set (the API's source), shown as the source
// badge's tooltip.
const sourceHelp = {
  topic: 'Set on this topic',
  group: 'Set on this group',
  broker: 'The broker config group.<name>, set on this node',
  cluster: 'The broker config group.<name>, the cluster-wide default',
  node: "The node's flag",
  default: "Kafka's default",
};

// configTable lists configs with their values and where each is set,
// those set on the topic or group itself highlighted; with enforced, a
// column says whether Cohort acts on each.
export function configTable(configs, enforced) {
  return h('div', { class: 'scroll' }, h('table', { class: 'data compact', 'data-testid': 'configs' },
    h('thead', {}, h('tr', {},
      h('th', {}, 'Config'), h('th', {}, 'Value'), h('th', {}, 'Source'), enforced && h('th', {}, 'Cohort'))),
    h('tbody', {}, configs.map((c) => h('tr', {
      'data-testid': 'config', 'data-config': c.name, 'data-source': c.source,
      class: c.source === 'topic' || c.source === 'group' ? 'explicit' : null,
    },
    h('td', {}, h('code', {}, c.name)),
    h('td', { 'data-testid': 'config-value' }, h('code', {}, c.value)),
    h('td', {}, h('span', { class: `badge source-${c.source}`, title: sourceHelp[c.source] ?? c.source }, c.source)),
    enforced && h('td', { 'data-testid': 'enforced', 'data-value': String(c.enforced) },
      c.enforced ? h('span', { class: 'enforced', title: 'Cohort acts on this value' }, '✓ enforced')
        : h('span', { class: 'muted', title: 'Stored and reported, so that tools which set it keep working; Cohort does not act on it' }, 'stored only')))))));
}

// badge is a plain label.
export function badge(text, cls) {
  return h('span', { class: `badge ${cls || ''}` }, text);
}

// groupHref is the page address of a group.
export function groupHref(group, tenant) {
  return `#/groups/${encodeURIComponent(group)}` + (tenant ? `?tenant=${encodeURIComponent(tenant)}` : '');
}
