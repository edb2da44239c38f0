// The topics this node knows, with each partition's leader and offsets,
// and their configs. In a cluster, a partition whose leader does not
// serve (gone, or suspended) is marked so: its records are out of reach
// until the node returns, whatever the offsets last read say.

import { h, int, offset, badge, plural, configTable, folded } from './dom.js';

// The topics whose configs a person opened: a redraw keeps them open.
const opened = new Set();

// configs is a topic's configs, folded: the summary names those the topic
// sets; opened, every one with its value and whether Cohort enforces it.
function configs(t) {
  const cs = t.configs || [];
  if (cs.length === 0) return '';
  const set = cs.filter((c) => c.source !== 'default');
  return folded(opened, t.name, { class: 'configs', 'data-testid': 'topic-configs' },
    ['Configs: ', set.length === 0 ? 'all defaults'
      : [`${int(set.length)} set`, set.map((c) => h('code', { class: 'explicit', title: c.enforced ? 'enforced' : 'stored only' }, `${c.name}=${c.value}`))]],
    configTable(cs, true));
}

export function mount() {
  const filter = h('input', { type: 'search', placeholder: 'Filter topics', 'aria-label': 'Filter topics' });
  const internal = h('input', { type: 'checkbox', 'data-testid': 'show-internal' });
  const summary = h('p', { class: 'summary', 'data-testid': 'topics-summary' });
  const body = h('div');
  let topics = null;
  let states = new Map(); // node id → state, in cluster mode

  function draw() {
    if (!topics) return;
    const f = filter.value.trim().toLowerCase();
    const shown = topics
      .filter((t) => (internal.checked || !t.internal) && (!f || t.name.toLowerCase().includes(f)))
      .sort((a, b) => Number(a.internal) - Number(b.internal) || a.name.localeCompare(b.name));
    // Counts what is listed: hidden internal topics and those the filter
    // leaves out are not in it.
    const nparts = shown.reduce((n, t) => n + t.partitions.length, 0);
    summary.replaceChildren(`${plural(shown.length, 'topic')} · ${plural(nparts, 'partition')}`);
    if (shown.length === 0) {
      body.replaceChildren(h('p', { class: 'empty' }, topics.length ? 'No topic matches.' : 'No topics yet.'));
      return;
    }
    body.replaceChildren(...shown.map((t) => {
      const ps = [...t.partitions].sort((a, b) => a.partition - b.partition);
      // Offsets are -1 where another node leads the partition.
      const known = ps.filter((p) => p.log_end_offset >= 0 && p.log_start_offset >= 0);
      const records = known.reduce((n, p) => n + (p.log_end_offset - p.log_start_offset), 0);
      return h('section', { class: 'panel', 'data-testid': 'topic', 'data-topic': t.name },
        h('h2', {}, t.name, t.internal ? badge('internal', 'state') : '',
          h('span', { class: 'note' }, `${plural(ps.length, 'partition')} · ${plural(records, 'record')}${known.length < ps.length ? ' on this node' : ''}`)),
        h('div', { class: 'scroll' }, h('table', { class: 'data compact' },
          h('thead', {}, h('tr', {},
            h('th', { class: 'num' }, 'Partition'), h('th', { class: 'num' }, 'Leader'),
            h('th', { class: 'num' }, 'Log start'), h('th', { class: 'num' }, 'Log end'), h('th', { class: 'num' }, 'Records'))),
          h('tbody', {}, ps.map((p) => h('tr', { 'data-testid': 'topic-partition', 'data-partition': p.partition },
            h('td', { class: 'num' }, p.partition),
            leader(p, states),
            h('td', { class: 'num' }, offset(p.log_start_offset)),
            h('td', { class: 'num', 'data-testid': 'log-end' }, offset(p.log_end_offset)),
            h('td', { class: 'num' }, p.log_end_offset < 0 || p.log_start_offset < 0 ? '—' : int(p.log_end_offset - p.log_start_offset))))))),
        configs(t));
    }));
  }

  filter.addEventListener('input', draw);
  internal.addEventListener('change', draw);
  return {
    title: 'Topics',
    el: h('section', {},
      h('div', { class: 'toolbar' }, h('h1', {}, 'Topics'), filter,
        h('label', { class: 'check' }, internal, ' internal topics')),
      summary, body),
    urls: ['api/v1/topics', 'api/v1/cluster'],
    update([res, cluster]) {
      topics = res.body.topics || [];
      states = new Map((cluster.body.cluster ? cluster.body.nodes || [] : []).map((n) => [n.id, n.state]));
      draw();
    },
  };
}

// leader is a partition's leader cell: marked, with the node's state
// ("gone" if the node is not listed), when the leader does not serve
// (leader_alive is false; the API gives it in cluster mode only).
function leader(p, states) {
  if (p.leader < 0) return h('td', { class: 'num', 'data-testid': 'leader', 'data-alive': 'false' }, 'none');
  if (p.leader_alive !== false) return h('td', { class: 'num', 'data-testid': 'leader' }, p.leader);
  const state = states.get(p.leader);
  const why = state && state !== 'serving' && state !== 'draining' ? state : 'gone';
  return h('td', { class: 'num', 'data-testid': 'leader', 'data-alive': 'false' },
    h('span', { class: 'leader-down', title: `Node ${p.leader} does not serve: this partition’s records are out of reach until it returns` }, `${p.leader} (${why})`));
}
