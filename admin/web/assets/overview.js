// The groups overview: one page of groups with their state, members,
// total lag, lag trend and status; share groups (KIP-932) with their
// records in flight, acquired and archived. An estate may have a million
// groups, so the server searches, filters, sorts and pages (limit and
// cursor), and the page asks for one page at a time. In cluster mode the
// list is the whole cluster's, from whichever node serves the page: each
// group says which node coordinates it, and a banner names the nodes
// whose groups are missing because they did not answer. Below them the
// cluster's nodes with their states, and its recent node events as this
// node saw them.

import { h, int, plural, seconds, status, badge, groupHref, time, ago } from './dom.js';
import { sparkline } from './chart.js';

// Groups a page asks for: a screenful or two, cheap to draw every poll.
const LIMIT = 100;
// Typing waits this long for a pause before asking the server.
const DEBOUNCE_MS = 300;

// pick is a select of values, its first option ('') meaning any.
function pick(id, label, opts, value) {
  return h('select', { 'aria-label': label, 'data-testid': id },
    opts.map(([v, t]) => h('option', { value: v, selected: v === value }, t)));
}

export function mount(r) {
  const p = r.params;
  const filter = h('input', {
    type: 'search', placeholder: 'Search groups', 'aria-label': 'Search groups',
    'data-testid': 'group-filter', value: p.get('q') || '',
  });
  const sort = pick('group-sort', 'Sort by', [['status', 'Worst status first'], ['name', 'By name'], ['lag', 'Largest lag first']], p.get('sort'));
  const st = pick('status-filter', 'Status', [['', 'Any status'], ...['ERR', 'STOP', 'STALL', 'WARN', 'OK', 'UNKNOWN'].map((s) => [s, s])], p.get('status'));
  const type = pick('type-filter', 'Type', [['', 'Any type'], ['classic', 'classic'], ['consumer', 'consumer'], ['share', 'share']], p.get('type'));
  const summary = h('p', { class: 'summary', 'data-testid': 'groups-summary' });
  // Over every group the query matches, as the server sums them.
  const totals = h('p', { class: 'summary', 'data-testid': 'groups-totals' });
  const partial = h('div', { class: 'notice', 'data-testid': 'partial', role: 'alert', hidden: true });
  const body = h('div', { class: 'scroll' });
  const cluster = h('section', { class: 'cluster', 'data-testid': 'cluster-events', hidden: true });
  // The cursor of each page from the first (none) to the one shown:
  // Previous pops, Next pushes the answer's next_cursor.
  let pages = [''];
  let res = null;
  let debounce = null;
  let applied = query(); // what the pages are of: typing changes it after a pause

  // query is the list's parameters, but for limit and cursor.
  function query() {
    const q = new URLSearchParams({ sort: sort.value });
    for (const [k, el] of [['q', filter], ['status', st], ['type', type]]) {
      if (el.value.trim()) q.set(k, el.value.trim());
    }
    return q;
  }

  function go(to) {
    pages = to;
    prev.disabled = next.disabled = true; // until the answer says
    r.refresh();
  }

  // apply starts over at the first page of a changed query, kept in the
  // address so that a reload keeps it (replaceState: no hashchange, so
  // the search box keeps its focus).
  function apply() {
    clearTimeout(debounce);
    applied = query();
    history.replaceState(null, '', `#/?${applied}`);
    go(['']);
  }

  const prev = h('button', { 'data-testid': 'prev', disabled: true, onclick: () => go(pages.slice(0, -1)) }, '‹ Previous');
  const next = h('button', { 'data-testid': 'next', disabled: true, onclick: () => res.next_cursor && go([...pages, res.next_cursor]) }, 'Next ›');

  function draw() {
    const groups = res.groups || [];
    // The range counts pages from the first; groups that come or go
    // before the cursor meanwhile make it approximate.
    const from = (pages.length - 1) * LIMIT + 1;
    summary.replaceChildren(plural(res.total ?? groups.length, 'group'),
      groups.length ? h('span', { 'data-testid': 'groups-range' }, ` · showing ${int(from)}–${int(from + groups.length - 1)}`) : '');
    const t = res.totals;
    totals.replaceChildren(t ? `${plural(t.members, 'member')} · total lag ${int(t.lag)}` : '',
      t && t.not_ok ? h('span', { class: 'warn-text' }, ` · ${int(t.not_ok)} not OK`) : '');
    prev.disabled = pages.length === 1;
    next.disabled = !res.next_cursor;
    if (groups.length === 0) {
      body.replaceChildren(h('p', { class: 'empty' }, pages.length > 1 ? 'No more groups.'
        : [...applied.keys()].length > 1 ? 'No group matches.' : 'No groups yet.'));
      return;
    }
    const coordinators = Array.isArray(res.nodes);
    const tenants = groups.some((g) => g.tenant);
    const shares = groups.some((g) => g.share);
    body.replaceChildren(h('table', { class: 'data', 'data-testid': 'groups' },
      h('thead', {}, h('tr', {},
        h('th', {}, 'Group'), tenants && h('th', {}, 'Tenant'), h('th', {}, 'Type'), h('th', {}, 'State'),
        coordinators && h('th', { class: 'num', title: 'The node that coordinates the group' }, 'Coordinator'),
        h('th', { class: 'num' }, 'Members'), h('th', { class: 'num' }, 'Total lag'), h('th', {}, 'Lag trend'),
        h('th', {}, 'Status'), h('th', { class: 'num', title: 'At the current rate of consumption' }, 'Time to clear'),
        shares && h('th', { class: 'num', title: 'Share groups: records from each partition’s start offset to its end offset' }, 'In flight'))),
      h('tbody', {}, groups.map((g) => h('tr', { 'data-testid': 'group-row', 'data-group': g.group, 'data-tenant': g.tenant || '' },
        h('td', { class: 'name' }, h('a', { href: groupHref(g.group, g.tenant) }, g.group)),
        tenants && h('td', {}, g.tenant || '—'),
        h('td', {}, badge(g.type, `type-${g.type}`)),
        h('td', { 'data-testid': 'state' }, g.state),
        coordinators && h('td', { class: 'num', 'data-testid': 'coordinator', 'data-value': g.coordinator ?? '' }, g.coordinator ?? '—'),
        h('td', { class: 'num', 'data-testid': 'members', 'data-value': g.members }, int(g.members)),
        h('td', { class: 'num', 'data-testid': 'total-lag', 'data-value': g.total_lag }, int(g.total_lag)),
        h('td', {}, sparkline(g.lag_trend)),
        h('td', {}, status(g.status)),
        h('td', { class: 'num' }, g.time_to_clear_seconds == null ? '—' : seconds(g.time_to_clear_seconds)),
        shares && inFlight(g.share))))));
  }

  filter.addEventListener('input', () => { clearTimeout(debounce); debounce = setTimeout(apply, DEBOUNCE_MS); });
  for (const el of [sort, st, type]) el.addEventListener('change', apply);
  return {
    title: 'Groups',
    el: h('section', {},
      h('div', { class: 'toolbar' }, h('h1', {}, 'Groups'), filter, sort, st, type),
      summary, totals, partial, body, h('div', { class: 'pager' }, prev, next), cluster),
    // Read at each poll: the poll refreshes the page shown, cursor and all.
    get urls() {
      const q = new URLSearchParams(applied);
      q.set('limit', LIMIT);
      if (pages.at(-1)) q.set('cursor', pages.at(-1));
      return [`api/v1/groups?${q}`, 'api/v1/cluster/events', 'api/v1/cluster'];
    },
    update([groups, events, nodes]) {
      res = groups.body;
      draw();
      drawPartial(partial, res);
      drawCluster(cluster, events.body, nodes.body);
    },
  };
}

// inFlight is a share group's records in flight, with how many are
// acquired and archived; a dash for other groups.
function inFlight(c) {
  if (!c) return h('td', { class: 'num' }, '—');
  return h('td', { class: 'num', 'data-testid': 'in-flight', 'data-value': c.in_flight,
    title: `available ${int(c.available)} · acquired ${int(c.acquired)} · acknowledged ${int(c.acknowledged)} · archived ${int(c.archived)} · redelivered ${int(c.redelivered)}` },
  int(c.in_flight), h('span', { class: 'muted' }, ` (${int(c.acquired)} acquired, ${int(c.archived)} archived)`));
}

// drawPartial names the nodes whose groups the list lacks (they did not
// answer the node serving the page in time), and why; hidden when the
// list is whole.
function drawPartial(el, res) {
  const missing = res.partial ? res.unanswered || [] : [];
  el.hidden = missing.length === 0;
  el.replaceChildren(...(el.hidden ? [] : [
    h('strong', {}, 'The list lacks the groups of ', plural(missing.length, 'node'), ':'),
    h('ul', {}, missing.map((u) => h('li', { 'data-testid': 'unanswered', 'data-node': u.node },
      `node ${u.node} did not answer: ${u.error}`, u.admin_url ? h('span', { class: 'muted' }, ` (${u.admin_url})`) : ''))),
  ]));
}

// How each node state is shown: its badge's class and its tooltip.
const nodeStates = {
  serving: ['status-ok', 'Registered and serving its shards'],
  draining: ['status-warn', 'Leaving: its shards are moving to the others'],
  suspended: ['status-err', 'Cannot renew its lease in etcd: it serves nothing until it can'],
  gone: ['status-err', 'Registered once and not now: it was lost (died or cut off from etcd) or left'],
};

// nodesTable lists the cluster's nodes: state, leader, this node, Kafka
// address and shards held; a node that does not serve is marked.
function nodesTable(nodes) {
  const ns = [...nodes].sort((a, b) => a.id - b.id);
  return h('div', { class: 'scroll' }, h('table', { class: 'data', 'data-testid': 'cluster-nodes' },
    h('thead', {}, h('tr', {}, h('th', {}, 'Node'), h('th', {}, 'State'), h('th', {}, 'Kafka address'),
      h('th', {}, 'Rack'), h('th', { class: 'num', title: 'Coordinator shards the last assignment gives it' }, 'Shards'))),
    h('tbody', {}, ns.map((n) => {
      const [cls, help] = nodeStates[n.state] || ['', n.state];
      const down = n.state === 'gone' || n.state === 'suspended';
      return h('tr', { 'data-testid': 'cluster-node', 'data-node': n.id, 'data-state': n.state, class: down ? 'node-down' : null },
        h('td', {}, `${n.id}`, n.self ? h('span', { class: 'muted', 'data-testid': 'self' }, ' (this node)') : '',
          n.leader ? [' ', h('span', { class: 'badge', 'data-testid': 'leader', title: 'Leads the cluster: decides which node holds which shard' }, 'leader')] : ''),
        h('td', {}, h('span', { class: `badge ${cls}`, title: help, 'data-testid': 'node-state' }, n.state)),
        h('td', {}, n.kafka_addr ? h('code', {}, n.kafka_addr) : '—'),
        h('td', {}, n.rack || '—'),
        h('td', { class: 'num', 'data-testid': 'shards', 'data-value': (n.shards || []).length }, int((n.shards || []).length)));
    }))));
}

// How each cluster event is shown: its badge's class and its tooltip.
const clusterEvents = {
  joined: ['status-ok', 'The node registered (or was registered when this node started)'],
  rejoined: ['status-ok', 'A node lost earlier registered again'],
  resumed: ['status-ok', 'This node renewed its lease and serves again'],
  draining: ['status-warn', 'The node is leaving: its shards are moving to the others'],
  lost: ['status-err', 'The node’s registration is gone: its lease expired (it died or was cut off from etcd), or it left'],
  suspended: ['status-err', 'This node could not renew its lease in time: it serves nothing until it can'],
};

// drawCluster fills the cluster panel with the nodes (from
// /api/v1/cluster) and the node events (newest first, the 20 newest),
// the counts after the newest; hidden outside cluster mode.
function drawCluster(el, c, nodes) {
  el.hidden = !c || !c.cluster;
  if (el.hidden) return;
  const evs = c.events || [];
  const last = evs[0];
  el.replaceChildren(
    h('h2', {}, 'Cluster', h('span', { class: 'note' }, 'its nodes as this node knows them')),
    nodes && nodes.cluster ? nodesTable(nodes.nodes || []) : '',
    h('h3', {}, 'Node events', h('span', { class: 'note' }, 'as this node saw them, newest first')),
    last ? h('p', { class: 'summary', 'data-testid': 'cluster-summary' },
      `${plural(last.serving, 'node')} serving · ${int(last.draining)} draining`,
      last.suspended ? h('span', { class: 'warn-text' }, ' · this node suspended') : '') : '',
    evs.length === 0 ? h('p', { class: 'empty' }, 'No cluster events yet.')
      : h('div', { class: 'scroll' }, h('table', { class: 'data' },
        h('thead', {}, h('tr', {}, h('th', {}, 'Time'), h('th', {}, 'Event'), h('th', {}, 'Node'),
          h('th', {}, 'Kafka address'), h('th', {}, 'Reason'),
          h('th', { class: 'num', title: 'Nodes serving · draining after the event' }, 'Serving · draining'))),
        h('tbody', {}, evs.slice(0, 20).map((e) => {
          const [cls, help] = clusterEvents[e.event] || ['', e.event];
          return h('tr', { 'data-testid': 'cluster-event', 'data-event': e.event, 'data-node': e.node },
            h('td', { title: ago(e.at) }, time(e.at)),
            h('td', {}, h('span', { class: `badge ${cls}`, title: help }, e.event)),
            h('td', {}, `${e.node}`, e.self ? h('span', { class: 'muted' }, ' (this node)') : ''),
            h('td', {}, e.kafka ? h('code', {}, e.kafka) : '—'),
            h('td', { class: 'muted' }, e.reason || ''),
            h('td', { class: 'num' }, `${int(e.serving)} · ${int(e.draining)}`));
        })))));
}
