// The groups overview: every group with its state, members, total lag,
// lag trend and status, worst status first; share groups (KIP-932) with
// their records in flight, acquired and archived. In cluster mode the
// list is the whole cluster's, from whichever node serves the page: each
// group says which node coordinates it, and a banner names the nodes
// whose groups are missing because they did not answer. Below them the
// cluster's nodes with their states, and its recent node events as this
// node saw them.

import { h, int, plural, seconds, status, badge, groupHref, time, ago } from './dom.js';
import { sparkline } from './chart.js';

// Statuses in the order a person should look at them.
const severity = { ERR: 0, STOP: 1, STALL: 2, WARN: 3, OK: 4, '': 5 };

export function mount() {
  const filter = h('input', {
    type: 'search', placeholder: 'Filter by group or tenant', 'aria-label': 'Filter groups',
    'data-testid': 'group-filter',
  });
  const summary = h('p', { class: 'summary', 'data-testid': 'groups-summary' });
  const partial = h('div', { class: 'notice', 'data-testid': 'partial', role: 'alert', hidden: true });
  const body = h('div', { class: 'scroll' });
  const cluster = h('section', { class: 'cluster', 'data-testid': 'cluster-events', hidden: true });
  let groups = null;
  let coordinators = false; // cluster mode: a column for each group's coordinator

  function draw() {
    if (!groups) return;
    const f = filter.value.trim().toLowerCase();
    const shown = groups
      .filter((g) => !f || g.group.toLowerCase().includes(f) || (g.tenant || '').toLowerCase().includes(f))
      .sort((a, b) => (severity[a.status || ''] ?? 9) - (severity[b.status || ''] ?? 9) ||
        a.group.localeCompare(b.group) || (a.tenant || '').localeCompare(b.tenant || ''));
    const members = groups.reduce((n, g) => n + (g.members || 0), 0);
    const lag = groups.reduce((n, g) => n + (g.total_lag || 0), 0);
    const bad = groups.filter((g) => g.status && g.status !== 'OK').length;
    summary.replaceChildren(`${plural(groups.length, 'group')} · ${plural(members, 'member')} · total lag ${int(lag)}`,
      bad ? h('span', { class: 'warn-text' }, ` · ${int(bad)} not OK`) : '');
    if (groups.length === 0) {
      body.replaceChildren(h('p', { class: 'empty' }, 'No groups yet.'));
      return;
    }
    if (shown.length === 0) {
      body.replaceChildren(h('p', { class: 'empty' }, 'No group matches the filter.'));
      return;
    }
    const tenants = groups.some((g) => g.tenant);
    const shares = groups.some((g) => g.share);
    body.replaceChildren(h('table', { class: 'data', 'data-testid': 'groups' },
      h('thead', {}, h('tr', {},
        h('th', {}, 'Group'), tenants && h('th', {}, 'Tenant'), h('th', {}, 'Type'), h('th', {}, 'State'),
        coordinators && h('th', { class: 'num', title: 'The node that coordinates the group' }, 'Coordinator'),
        h('th', { class: 'num' }, 'Members'), h('th', { class: 'num' }, 'Total lag'), h('th', {}, 'Lag trend'),
        h('th', {}, 'Status'), h('th', { class: 'num', title: 'At the current rate of consumption' }, 'Time to clear'),
        shares && h('th', { class: 'num', title: 'Share groups: records from each partition’s start offset to its end offset' }, 'In flight'))),
      h('tbody', {}, shown.map((g) => h('tr', { 'data-testid': 'group-row', 'data-group': g.group, 'data-tenant': g.tenant || '' },
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

  filter.addEventListener('input', draw);
  return {
    title: 'Groups',
    el: h('section', {},
      h('div', { class: 'toolbar' }, h('h1', {}, 'Groups'), filter),
      summary, partial, body, cluster),
    urls: ['api/v1/groups', 'api/v1/cluster/events', 'api/v1/cluster'],
    update([res, events, nodes]) {
      groups = res.body.groups || [];
      coordinators = Array.isArray(res.body.nodes);
      draw();
      drawPartial(partial, res.body);
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
