// The groups overview: every group with its state, members, total lag,
// lag trend and status, worst status first; share groups (KIP-932) with
// their records in flight, acquired and archived.

import { h, int, plural, seconds, status, badge, groupHref } from './dom.js';
import { sparkline } from './chart.js';

// Statuses in the order a person should look at them.
const severity = { ERR: 0, STOP: 1, STALL: 2, WARN: 3, OK: 4, '': 5 };

export function mount() {
  const filter = h('input', {
    type: 'search', placeholder: 'Filter by group or tenant', 'aria-label': 'Filter groups',
    'data-testid': 'group-filter',
  });
  const summary = h('p', { class: 'summary', 'data-testid': 'groups-summary' });
  const body = h('div', { class: 'scroll' });
  let groups = null;

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
        h('th', { class: 'num' }, 'Members'), h('th', { class: 'num' }, 'Total lag'), h('th', {}, 'Lag trend'),
        h('th', {}, 'Status'), h('th', { class: 'num', title: 'At the current rate of consumption' }, 'Time to clear'),
        shares && h('th', { class: 'num', title: 'Share groups: records from each partition’s start offset to its end offset' }, 'In flight'))),
      h('tbody', {}, shown.map((g) => h('tr', { 'data-testid': 'group-row', 'data-group': g.group, 'data-tenant': g.tenant || '' },
        h('td', { class: 'name' }, h('a', { href: groupHref(g.group, g.tenant) }, g.group)),
        tenants && h('td', {}, g.tenant || '—'),
        h('td', {}, badge(g.type, `type-${g.type}`)),
        h('td', { 'data-testid': 'state' }, g.state),
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
      summary, body),
    urls: ['api/v1/groups'],
    update([res]) {
      groups = res.body.groups || [];
      draw();
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
