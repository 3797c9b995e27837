// The graph of a job's flow on its page: every job of the flow (or, for a
// job of no flow, its parents and children), in columns by depth, each a
// link to its page showing its state, with an arrow from each parent to
// its child. A list under the drawing says the same in words, for screen
// readers and for flows too large to draw.
import { h, badge } from './dom.js';

const NS = 'http://www.w3.org/2000/svg';
const W = 180;
const H = 36;
const GX = 56;
const GY = 12;
const MAX_DRAWN = 300;

function svg(tag, attrs, ...children) {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
  for (const c of children) if (c) el.append(c);
  return el;
}

// graphOf returns {nodes, edges} for job j and its flow f (null when it
// has none): nodes {id, label, state}, edges [parent id, child id].
export function graphOf(j, f) {
  if (f && f.jobs && f.jobs.length) {
    const nodes = f.jobs.map((x) => ({ id: x.id, label: x.flow_node || x.kind, kind: x.kind, state: x.state }));
    const known = new Set(nodes.map((n) => n.id));
    const edges = (f.edges || []).filter((e) => known.has(e.parent) && known.has(e.child)).map((e) => [e.parent, e.child]);
    return { nodes, edges };
  }
  const ref = (x) => ({ id: x.id, label: x.flow_node || x.kind, kind: x.kind, state: x.state });
  const nodes = [...(j.parents || []).map(ref), ref(j), ...(j.children || []).map(ref)];
  const edges = [...(j.parents || []).map((p) => [p.id, j.id]), ...(j.children || []).map((c) => [j.id, c.id])];
  return { nodes, edges };
}

// depths puts each node one column right of its deepest parent.
function depths(nodes, edges) {
  const parents = new Map(nodes.map((n) => [n.id, []]));
  for (const [p, c] of edges) parents.get(c).push(p);
  const depth = new Map();
  const visit = (id, seen) => {
    if (depth.has(id)) return depth.get(id);
    if (seen.has(id)) return 0; // a cycle cannot be stored; stay safe anyway
    seen.add(id);
    const d = Math.max(-1, ...parents.get(id).map((p) => visit(p, seen))) + 1;
    depth.set(id, d);
    return d;
  };
  for (const n of nodes) visit(n.id, new Set());
  return depth;
}

function draw(g, current) {
  const depth = depths(g.nodes, g.edges);
  const rows = [];
  const pos = new Map();
  for (const n of g.nodes) {
    const d = depth.get(n.id);
    rows[d] = (rows[d] || 0) + 1;
    pos.set(n.id, { x: d * (W + GX), y: (rows[d] - 1) * (H + GY) });
  }
  const width = rows.length * (W + GX) - GX;
  const height = Math.max(...rows) * (H + GY) - GY;
  const lines = g.edges.map(([p, c]) => {
    const a = pos.get(p);
    const b = pos.get(c);
    return svg('path', {
      class: 'fg-edge', 'marker-end': 'url(#fg-arrow)',
      d: `M${a.x + W},${a.y + H / 2} C${a.x + W + GX / 2},${a.y + H / 2} ${b.x - GX / 2},${b.y + H / 2} ${b.x},${b.y + H / 2}`,
    });
  });
  const boxes = g.nodes.map((n) => {
    const p = pos.get(n.id);
    const title = svg('title');
    title.textContent = `${n.label} (job ${n.id}, ${n.kind}): ${n.state}`;
    const label = svg('text', { x: p.x + 10, y: p.y + 15 });
    label.textContent = n.label.length > 22 ? `${n.label.slice(0, 21)}…` : n.label;
    const state = svg('text', { x: p.x + 10, y: p.y + 29, class: 'fg-state' });
    state.textContent = n.state;
    return svg('a', { href: `#/job/${encodeURIComponent(n.id)}`, class: `fg-node s-${n.state}${n.id === current ? ' fg-current' : ''}`, 'data-job': n.id },
      title, svg('rect', { x: p.x, y: p.y, width: W, height: H, rx: 6 }), label, state);
  });
  const defs = svg('defs', {}, svg('marker', { id: 'fg-arrow', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' },
    svg('path', { d: 'M0,0 L10,5 L0,10 z', class: 'fg-arrowhead' })));
  return svg('svg', { id: 'flow-graph', width, height, viewBox: `-2 -2 ${width + 4} ${height + 4}`, role: 'img', 'aria-label': 'Graph of the flow: each job and the jobs it waits for' },
    defs, ...lines, ...boxes);
}

// words lists the job's parents and children as links with their states.
function words(j) {
  const item = (x) => h('li', {}, h('a', { href: `#/job/${encodeURIComponent(x.id)}`, class: 'mono' }, x.id), ' ', x.flow_node || x.kind, ' ', badge(x.state));
  const list = (id, xs, none) => (xs && xs.length ? h('ul', { id, class: 'flow-list' }, xs.map(item)) : h('p', { class: 'hint', id }, none));
  return h('div', { class: 'cols' },
    h('div', {}, h('h3', {}, 'Waits for (parents)'), list('job-parents', j.parents, 'No parents: it waits for no job.')),
    h('div', {}, h('h3', {}, 'Released to (children)'), list('job-children', j.children, 'No children: no job waits for it.')));
}

// flowGraph is the content of the job page's Flow panel, or null when
// the job has no flow, parents or children.
export function flowGraph(j, f) {
  if (!j.flow && !(j.parents || []).length && !(j.children || []).length) return null;
  const g = graphOf(j, f);
  const head = j.flow ? h('p', {}, 'Flow ', h('span', { class: 'mono', id: 'job-flow' }, j.flow),
    f && f.name ? ` (${f.name})` : '', `: ${g.nodes.length} job${g.nodes.length === 1 ? '' : 's'}, node `, h('strong', {}, j.flow_node)) : null;
  const pic = g.nodes.length <= MAX_DRAWN ? h('div', { class: 'flow-graph' }, draw(g, j.id))
    : h('p', { class: 'hint' }, `The flow has ${g.nodes.length} jobs: too many to draw; its parents and children are listed below.`);
  return [head, pic, words(j)];
}
