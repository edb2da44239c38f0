// One group's page: its summary, members, the partition × member
// assignment grid, lag per partition with its trend, the rebalance
// timeline, newest first, and the group's configs. A share group's
// (KIP-932) partitions may have several members each, and show their
// share-partition start offset and records in flight instead of a
// committed offset.

import { h, int, offset, plural, seconds, ms, time, ago, ranges, status, badge, configTable, folded } from './dom.js';
import { sparkline, chart } from './chart.js';

export function mount(route) {
  const name = route.group, tenant = route.tenant;
  const body = h('div');
  const notice = h('div', { class: 'notice', 'data-testid': 'group-unavailable', role: 'alert', hidden: true });
  const el = h('section', {},
    h('p', { class: 'crumbs' }, h('a', { href: '#/' }, 'Groups'), ' / '),
    h('h1', { 'data-testid': 'group-name' }, name, tenant ? h('span', { class: 'tenant' }, ` (tenant ${tenant})`) : ''),
    notice, body);
  let shown = false; // whether body holds the group as last read
  return {
    title: name,
    el,
    urls: [`api/v1/groups/${encodeURIComponent(name)}` + (tenant ? `?tenant=${encodeURIComponent(tenant)}` : '')],
    // In a cluster another node may coordinate the group: the node asked
    // answers 502 when that node did not answer, 503 while the group's
    // shard has no coordinator (it is moving).
    accept: [404, 502, 503],
    update([res]) {
      const down = res.status === 502 || res.status === 503;
      notice.hidden = !down;
      body.classList.toggle('stale', down && shown);
      if (down) {
        // The group as last read stays, dimmed, under the reason: its
        // coordinator may answer again, or another node take it over.
        notice.replaceChildren(h('strong', {}, res.status === 502 ? 'The group’s coordinator did not answer' : 'The group has no coordinator now'),
          `: ${res.body.error || `HTTP ${res.status}`}. `, shown ? 'Showing the group as last read. ' : '', 'Retrying.');
        return;
      }
      if (res.status === 404) {
        shown = false;
        body.replaceChildren(h('p', { class: 'empty', 'data-testid': 'not-found' },
          `No group “${name}”${res.body.error ? ` (${res.body.error})` : ''}. `,
          'This page will show it if it appears. ', h('a', { href: '#/' }, 'All groups')));
        return;
      }
      shown = true;
      body.replaceChildren(...render(res.body));
    },
  };
}

function render(g) {
  const consumer = g.type === 'consumer', share = g.type === 'share';
  // By client id first: member ids are often random, client ids say who.
  const members = [...(g.members || [])].sort((a, b) =>
    (a.client_id || '').localeCompare(b.client_id || '') || a.member_id.localeCompare(b.member_id));
  // Short labels (M1, M2, …) tie the members table to the grid's columns.
  const label = new Map(members.map((m, i) => [m.member_id, `M${i + 1}`]));
  return [
    h('div', { class: 'badges' }, badge(g.type, `type-${g.type}`), badge(g.state, 'state'), status(g.status)),
    facts(g, consumer || share, members.length),
    section('Total lag over time', null, chart(g.lag_trend)),
    section(`Members (${members.length})`, null, membersTable(members, label, consumer, share)),
    section('Assignment', consumer ? '● owned  ○ being assigned  ◐ being revoked' : share ? '● assigned (a partition may have several members)' : null,
      grid(g, members, label, consumer)),
    share
      ? section('Share partitions', 'records in flight: from the start offset to the end offset; lag as KIP-1226', sharePartitionsTable(g.partitions || [], label))
      : section('Lag per partition', null, partitionsTable(g.partitions || [], label)),
    section('Rebalances', 'newest first', timeline(g.timeline || [], consumer || share)),
    section('Configs', 'consumer.* apply to consumer groups at each member’s next heartbeat (KIP-848); share.* to share groups',
      configTable(g.configs || [], false)),
  ];
}

function section(title, note, ...content) {
  return h('section', { class: 'panel' },
    h('h2', {}, title, note ? h('span', { class: 'note' }, note) : ''), ...content);
}

// facts are the group's summary; epochs: a consumer or share group's
// epochs rather than a generation.
function facts(g, epochs, n) {
  const rows = [
    ['State', g.state],
    ['Members', int(n)],
    ['Total lag', h('span', { 'data-testid': 'total-lag', 'data-value': g.total_lag }, int(g.total_lag))],
    ['Time to clear', g.time_to_clear_seconds == null ? '—' : seconds(g.time_to_clear_seconds)],
    ['Protocol', [g.protocol_type, g.balancer].filter(Boolean).join(' / ') || '—'],
    epochs ? ['Epoch', `${g.epoch ?? '—'} (assignment ${g.assignment_epoch ?? '—'})`] : ['Generation', g.generation ?? '—'],
    ['CGP id', h('code', { 'data-testid': 'cgp-id' }, g.cgp_id || '—')],
    ['RRL', h('code', { 'data-testid': 'rrl' }, g.rrl || '—')],
  ];
  if (g.share) {
    const c = g.share;
    rows.push(['In flight', h('span', { 'data-testid': 'in-flight', 'data-value': c.in_flight }, int(c.in_flight))],
      ['Acquired', h('span', { 'data-testid': 'acquired', 'data-value': c.acquired }, int(c.acquired))],
      ['Archived', h('span', { 'data-testid': 'archived', 'data-value': c.archived }, int(c.archived))],
      ['Redelivered', h('span', { title: 'records in flight delivered more than once' }, int(c.redelivered))]);
  }
  if (g.tenant) rows.push(['Tenant', g.tenant]);
  if (g.coordinator != null) {
    rows.push(['Coordinated by', h('span', { 'data-testid': 'coordinator', 'data-value': g.coordinator }, `node ${g.coordinator}`)]);
  }
  return h('dl', { class: 'facts' }, rows.map(([k, v]) => h('div', {}, h('dt', {}, k), h('dd', {}, v))));
}

function parts(assignment) {
  const a = assignment || [];
  if (a.length === 0) return '—';
  return a.map((t) => `${t.topic} [${ranges(t.partitions)}]`).join('; ');
}

function count(assignment) {
  return (assignment || []).reduce((n, t) => n + t.partitions.length, 0);
}

// membersTable: a consumer or share member's epoch; a consumer member's
// target too.
function membersTable(members, label, consumer, share) {
  if (members.length === 0) return h('p', { class: 'empty' }, 'No members.');
  return h('div', { class: 'scroll' }, h('table', { class: 'data', 'data-testid': 'members' },
    h('thead', {}, h('tr', {},
      h('th', {}, ''), h('th', {}, 'Member'), h('th', {}, 'Instance'), h('th', {}, 'Client'), h('th', {}, 'Host'),
      (consumer || share) && h('th', { class: 'num' }, 'Epoch'), h('th', { class: 'num' }, share ? 'Assigned' : 'Owned'), h('th', {}, 'Partitions'),
      consumer && h('th', {}, 'Target'))),
    h('tbody', {}, members.map((m) => {
      const pending = consumer && parts(m.target_assignment) !== parts(m.assignment);
      return h('tr', { 'data-testid': 'member', 'data-member': m.member_id },
        h('td', { class: 'label' }, label.get(m.member_id)),
        h('td', { class: 'id', title: m.member_id }, m.member_id),
        h('td', {}, m.instance_id || '—'),
        h('td', {}, m.client_id || '—'),
        h('td', {}, m.host || '—'),
        (consumer || share) && h('td', { class: 'num' }, m.member_epoch ?? '—'),
        h('td', { class: 'num' }, int(count(m.assignment))),
        h('td', { class: 'parts' }, parts(m.assignment)),
        // "reached": the member owns what the group assigned it.
        consumer && h('td', { class: pending ? 'parts pending' : 'parts' },
          pending ? parts(m.target_assignment) : count(m.assignment) ? 'reached' : '—'));
    }))));
}

const key = (topic, p) => `${topic}\u0000${p}`;

// owners maps each partition to the members whose field (assignment or
// target_assignment) has it: one, but for a share group's, several.
function owners(members, field) {
  const m = new Map();
  for (const mem of members) {
    for (const t of mem[field] || []) {
      for (const p of t.partitions) {
        const k = key(t.topic, p);
        if (!m.has(k)) m.set(k, new Set());
        m.get(k).add(mem.member_id);
      }
    }
  }
  return m;
}

// grid is the partition × member assignment: a row per partition the
// group covers, a column per member.
function grid(g, members, label, consumer) {
  const owned = owners(members, 'assignment');
  const target = consumer ? owners(members, 'target_assignment') : owned;
  const rows = new Map();
  for (const p of g.partitions || []) rows.set(key(p.topic, p.partition), [p.topic, p.partition]);
  for (const m of [owned, target]) {
    for (const k of m.keys()) {
      if (!rows.has(k)) { const [t, p] = k.split('\u0000'); rows.set(k, [t, Number(p)]); }
    }
  }
  if (rows.size === 0) return h('p', { class: 'empty' }, 'No partitions assigned.');
  const sorted = [...rows.values()].sort((a, b) => a[0].localeCompare(b[0]) || a[1] - b[1]);
  return h('div', { class: 'scroll' }, h('table', { class: 'grid', 'data-testid': 'assignment-grid' },
    h('thead', {}, h('tr', {}, h('th', {}, 'Partition'),
      members.map((m) => h('th', { title: m.member_id }, label.get(m.member_id))), h('th', {}, 'Unassigned'))),
    h('tbody', {}, sorted.map(([topic, p]) => {
      const k = key(topic, p), o = owned.get(k) || new Set(), t = target.get(k) || new Set();
      return h('tr', { 'data-topic': topic, 'data-partition': p, 'data-owner': [...o].join(',') },
        h('th', {}, `${topic} / ${p}`),
        members.map((m) => {
          const id = m.member_id;
          if (o.has(id) && t.has(id)) return h('td', { class: 'owned', title: `${label.get(id)} owns it` }, '●');
          if (o.has(id)) return h('td', { class: 'revoking', title: `${label.get(id)} is giving it up` }, '◐');
          if (t.has(id)) return h('td', { class: 'assigning', title: `${label.get(id)} is getting it` }, '○');
          return h('td', {}, '');
        }),
        h('td', { class: o.size || t.size ? '' : 'unowned' }, o.size || t.size ? '' : '●'));
    }))));
}

function partitionsTable(ps, label) {
  if (ps.length === 0) return h('p', { class: 'empty' }, 'No committed or assigned partitions.');
  const sorted = [...ps].sort((a, b) => a.topic.localeCompare(b.topic) || a.partition - b.partition);
  return h('div', { class: 'scroll' }, h('table', { class: 'data', 'data-testid': 'partitions' },
    h('thead', {}, h('tr', {},
      h('th', {}, 'Topic'), h('th', { class: 'num' }, 'Partition'), h('th', {}, 'Member'),
      h('th', { class: 'num' }, 'Committed'), h('th', { class: 'num' }, 'Log start'), h('th', { class: 'num' }, 'Log end'),
      h('th', { class: 'num' }, 'Lag'), h('th', {}, 'Lag trend'), h('th', {}, 'Status'))),
    h('tbody', {}, sorted.map((p) => h('tr', { 'data-testid': 'partition', 'data-topic': p.topic, 'data-partition': p.partition },
      h('td', {}, p.topic),
      h('td', { class: 'num' }, p.partition),
      h('td', { title: p.member_id || 'unassigned' }, p.member_id ? (label.get(p.member_id) || p.member_id) : '—'),
      h('td', { class: 'num', title: p.committed_at ? `committed ${time(p.committed_at)}, ${ago(p.committed_at)}` : null },
        p.committed_offset < 0 ? 'none' : int(p.committed_offset)),
      h('td', { class: 'num' }, offset(p.log_start_offset)),
      h('td', { class: 'num', title: p.log_end_offset < 0 ? 'another node leads this partition' : null }, offset(p.log_end_offset)),
      // No lag without a commit, or when another node leads the partition.
      h('td', { class: 'num', 'data-testid': 'lag', 'data-value': p.lag ?? '' }, int(p.lag)),
      h('td', {}, sparkline(p.lag_history)),
      h('td', {}, status(p.status)))))));
}

// sharePartitionsTable is a share group's partitions: their members,
// start offset, lag and records in flight by state.
function sharePartitionsTable(ps, label) {
  if (ps.length === 0) return h('p', { class: 'empty' }, 'No share partitions assigned or fetched.');
  const sorted = [...ps].sort((a, b) => a.topic.localeCompare(b.topic) || a.partition - b.partition);
  const cell = (p, k, id) => {
    const v = p.share ? p.share[k] : null;
    return h('td', { class: 'num', 'data-testid': id, 'data-value': v ?? '' }, int(v));
  };
  return h('div', { class: 'scroll' }, h('table', { class: 'data', 'data-testid': 'share-partitions' },
    h('thead', {}, h('tr', {},
      h('th', {}, 'Topic'), h('th', { class: 'num' }, 'Partition'), h('th', {}, 'Members'),
      h('th', { class: 'num', title: 'share-partition start offset: every record before it is done' }, 'Start'),
      h('th', { class: 'num' }, 'Log end'), h('th', { class: 'num' }, 'Lag'),
      h('th', { class: 'num' }, 'In flight'), h('th', { class: 'num' }, 'Available'), h('th', { class: 'num' }, 'Acquired'),
      h('th', { class: 'num' }, 'Acknowledged'), h('th', { class: 'num' }, 'Archived'),
      h('th', { class: 'num', title: 'records in flight delivered more than once' }, 'Redelivered'),
      h('th', {}, 'Lag trend'), h('th', {}, 'Status'))),
    h('tbody', {}, sorted.map((p) => h('tr', { 'data-testid': 'partition', 'data-topic': p.topic, 'data-partition': p.partition },
      h('td', {}, p.topic),
      h('td', { class: 'num' }, p.partition),
      h('td', { title: (p.member_ids || []).join(', ') || 'unassigned' },
        (p.member_ids || []).map((id) => label.get(id) || id).join(' ') || '—'),
      // No state until a member first fetches the partition, or when it
      // is on another node's share-state shard.
      h('td', { class: 'num', 'data-testid': 'start-offset' }, p.share ? int(p.share.start_offset) : '—'),
      h('td', { class: 'num', title: p.log_end_offset < 0 ? 'another node leads this partition' : null }, offset(p.log_end_offset)),
      h('td', { class: 'num', 'data-testid': 'lag', 'data-value': p.lag ?? '' }, int(p.lag)),
      cell(p, 'in_flight', 'in-flight'), cell(p, 'available', 'available'), cell(p, 'acquired', 'acquired'),
      cell(p, 'acknowledged', 'acknowledged'), cell(p, 'archived', 'archived'), cell(p, 'redelivered', 'redelivered'),
      h('td', {}, sparkline(p.lag_history)),
      h('td', {}, status(p.status)))))));
}

const phaseNames = [['join_ms', 'join'], ['sync_ms', 'sync'], ['revocation_ms', 'revocation'], ['assignment_ms', 'assignment']];

// The rebalances whose member events a person opened: a redraw keeps them
// open.
const opened = new Set();

// timeline: epochs for a consumer or share group's rebalances.
function timeline(rs, epochs) {
  if (rs.length === 0) return h('p', { class: 'empty', 'data-testid': 'no-rebalances' }, 'No rebalance recorded yet.');
  return h('ol', { class: 'timeline', 'data-testid': 'timeline' }, rs.map((r) => {
    const who = [r.member_id, r.instance_id && `instance ${r.instance_id}`].filter(Boolean).join(', ');
    const phases = phaseNames.filter(([k]) => r.phases && r.phases[k] > 0);
    const members = r.members_before !== undefined && r.members_before !== r.members
      ? `${int(r.members_before)} → ${plural(r.members, 'member')}` : plural(r.members, 'member');
    const state = r.in_progress ? badge('in progress', 'live')
      : r.abandoned ? badge('abandoned', 'status-warn')
        : h('span', { class: 'muted' }, `took ${ms(r.duration_ms)}`);
    return h('li', {
      'data-testid': 'rebalance', 'data-generation': r.generation, 'data-cause': r.cause,
      class: r.in_progress ? 'in-progress' : null,
    },
    h('div', { class: 'when' },
      h('span', { title: r.started_at }, time(r.started_at)),
      h('span', { class: 'muted' }, ago(r.started_at))),
    h('div', { class: 'what' },
      h('div', {},
        h('strong', {}, `${epochs ? 'Epoch' : 'Generation'} ${r.generation ?? '—'}`), ' ',
        badge(r.cause || 'other', 'cause'), ' ', state,
        r.restarts > 0 ? h('span', { class: 'muted' }, ` · restarted ${r.restarts}×`) : ''),
      h('div', { class: 'detail' },
        who && ['by ', h('code', {}, who), ' · '],
        members,
        ` · ${r.partitions_moved == null || r.partitions_moved < 0 ? 'partitions moved unknown' : `${plural(r.partitions_moved, 'partition')} moved`}`,
        r.protocol ? ` · ${r.protocol}` : '',
        r.reason ? [' · ', h('q', {}, r.reason)] : ''),
      phases.length ? h('div', { class: 'phases', title: 'time spent in each phase' },
        h('div', { class: 'bar' }, phases.map(([k, n]) => {
          const seg = h('span', { class: `ph ph-${n}`, title: `${n} ${ms(r.phases[k])}` });
          seg.style.flexGrow = String(r.phases[k]); // CSSOM: allowed by the CSP
          return seg;
        })),
        h('div', { class: 'legend' }, phases.map(([k, n]) => h('span', {}, h('i', { class: `ph ph-${n}` }), `${n} ${ms(r.phases[k])}`)))) : '',
      memberEvents(r)));
  }));
}

// memberEvents lists who joined, left, expired or was fenced before the
// rebalance, folded.
function memberEvents(r) {
  const evs = r.member_events || [];
  if (evs.length === 0) return '';
  const key = `${r.started_at}|${r.generation}`;
  const more = r.member_events_dropped > 0 ? ` (and ${int(r.member_events_dropped)} more)` : '';
  return folded(opened, key, { class: 'events' }, `${plural(evs.length, 'member event')}${more}`,
  h('ul', {}, evs.map((e) => h('li', { 'data-testid': 'member-event', 'data-kind': e.kind },
    h('span', { class: 'muted' }, time(e.at)), ' ', e.kind, ' ',
    h('code', {}, [e.member_id, e.instance_id && `instance ${e.instance_id}`].filter(Boolean).join(', ')),
    e.reason ? [' ', h('q', {}, e.reason)] : ''))));
}
