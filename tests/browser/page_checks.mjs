// The checks run on one report page in the browser. Each takes a Checker
// (report_test.mjs): c.ok(what) for a check that held, c.fail(what, why) for
// one that did not; none throws for a failed check, so one run names every
// failure.
import fs from 'node:fs';
import path from 'node:path';
import { KNOWN_SECTIONS, TOP_ROWS, usToNs } from './cli_figures.mjs';

const MAX_DIFFS = 5;  // mismatching cells shown per table

// Every table's header keys and its rows' data-values, as the DOM has them.
// A table draws its first 500 rows and a "show all" row: clicked first, so
// every row is compared (and stays drawn for the sorting checks).
async function readTable(page, id) {
  return page.evaluate((id) => {
    const t = document.getElementById(id);
    if (!t) return null;
    const more = t.querySelector('tbody tr.more-rows td');
    if (more) more.click();
    const keys = [...t.querySelectorAll('thead th')].map((th) => th.getAttribute('data-key'));
    const rows = [...t.querySelectorAll('tbody tr:not(.more-rows)')].map((tr) => [...tr.querySelectorAll('td')].map((td) =>
      td.getAttribute('data-value')));
    return { keys, rows };
  }, id);
}

// The page's table `id` against the CLI's rows: the same rows (by name) and,
// per column, data-value equal to the CLI's figure in raw units.
// columns: [[page key, CLI field, convert (CLI text -> page data-value)]].
async function compareTable(c, page, id, cliRows, [pageName, cliName], columns) {
  const what = `${id} equals the CLI`;
  const t = await readTable(page, id);
  if (!t) return c.fail(what, `no table #${id} on the page`);
  if (t.keys.some((k) => k === null)) return c.fail(what, `a <th> of #${id} has no data-key`);
  if (t.rows.some((r) => r.some((v) => v === null))) return c.fail(what, `a <td> of #${id} has no data-value`);
  const missing = [pageName, ...columns.map((col) => col[0])].filter((k) => !t.keys.includes(k));
  if (missing.length) return c.fail(what, `#${id} lacks columns ${missing.join(', ')} (it has ${t.keys.join(', ')})`);
  const byName = new Map();
  for (const r of t.rows) {
    const name = r[t.keys.indexOf(pageName)];
    if (byName.has(name)) return c.fail(what, `#${id} has two rows named '${name}'`);
    byName.set(name, r);
  }
  const diffs = [];
  if (t.rows.length !== cliRows.length) diffs.push(`${t.rows.length} rows on the page, ${cliRows.length} from the CLI`);
  for (const cli of cliRows) {
    const r = byName.get(cli[cliName]);
    if (!r) { diffs.push(`row '${cli[cliName]}' is missing`); continue; }
    for (const [key, field, convert] of columns) {
      const want = convert(cli[field], cli), got = r[t.keys.indexOf(key)];
      if (got !== want) diffs.push(`'${cli[cliName]}' ${key}: page ${got}, CLI ${want} (${field} ${cli[field]})`);
    }
  }
  if (diffs.length) return c.fail(what, diffs.slice(0, MAX_DIFFS).join('; ') +
    (diffs.length > MAX_DIFFS ? `; and ${diffs.length - MAX_DIFFS} more` : ''));
  c.ok(`${what} (${cliRows.length} rows, ${columns.length + 1} columns)`);
}

const same = (v) => String(v);
const us = (v) => usToNs(v);
const json = (v) => (v === null || v === undefined ? '' : String(v));

export async function checkSections(c, page, expected) {
  const ids = await page.$$eval('section', (s) => s.map((x) => x.id));
  const navs = await page.$$eval('nav a', (a) => a.map((x) => x.getAttribute('href')));
  const present = new Set();
  for (const id of ids) {
    const m = /^section-(.+)$/.exec(id);
    if (!m) c.fail('sections', `a <section> whose id is not section-<id>: '${id}'`);
    else if (!KNOWN_SECTIONS.includes(m[1])) {
      c.fail('sections', `unknown section '${m[1]}': add it to the test (cli_figures.mjs)`);
    } else present.add(m[1]);
  }
  for (const [id, e] of expected) {
    const what = `section ${id} ${e.yes ? 'present' : 'absent'} (${e.why})`;
    if (present.has(id) !== e.yes) c.fail(what, present.has(id) ? 'the page has it' : 'the page lacks it');
    else if (present.has(id) && !navs.includes(`#section-${id}`)) c.fail(what, 'the navigation does not link to it');
    else c.ok(what);
  }
  return present;
}

export async function checkOverview(c, page, info) {
  const m = /^Events: (\d+)/m.exec(info);
  if (!m) return c.fail('overview events', '`ringprof info` printed no "Events: N" line');
  const text = await page.$eval('#section-overview', (s) => s.textContent);
  const events = Number(m[1]).toLocaleString('en-US');
  if (!text.includes(events)) c.fail('overview events equal `ringprof info`', `no "${events}" in: ${text}`);
  else c.ok(`overview events equal \`ringprof info\` (${events})`);
}

// The findings, in order, with their severity, title and figures, equal
// what `ringprof findings --format json` prints.
export async function checkFindings(c, page, f) {
  const shown = await page.$$eval('#section-findings div.finding', (ds) => ds.map((d) => ({
    rule: d.getAttribute('data-rule'), severity: d.getAttribute('data-severity'),
    title: d.querySelector('h3').textContent,
    figures: Object.fromEntries([...d.querySelectorAll('.fig')].map((s) => [s.getAttribute('data-name'),
      s.textContent.slice(s.getAttribute('data-name').length + 1)])) })));
  const want = f.findings.map((x) => ({ rule: x.rule, severity: x.severity, title: `${x.severity} ${x.title}`,
    figures: x.figures }));
  const what = `findings equal \`ringprof findings\` (${want.map((x) => x.rule).join(', ') || 'none'})`;
  if (JSON.stringify(shown) !== JSON.stringify(want))
    return c.fail(what, `page ${JSON.stringify(shown).slice(0, 400)} vs CLI ${JSON.stringify(want).slice(0, 400)}`);
  if (!want.length && !(await page.$('#section-findings p.none'))) return c.fail(what, 'no "none found" line');
  c.ok(what);
}

export async function checkOperators(c, page, f) {
  const cols = [['calls', 'calls', same], ['total_ns', 'total_us', us], ['self_ns', 'self_us', us],
    ['avg_ns', 'avg_us', us], ['min_ns', 'min_us', us], ['max_ns', 'max_us', us]];
  const header = Object.keys(f.table[0] || {});
  if (header.includes('self_gpu_us')) {
    cols.push(['gpu_self_ns', 'self_gpu_us', us], ['gpu_total_ns', 'gpu_total_us', us]);
  }
  if (header.includes('self_mem_bytes')) cols.push(['self_mem', 'self_mem_bytes', same], ['mem', 'mem_bytes', same]);
  if (header.includes('flops')) {
    // FLOPs exactly (0 on the page where the CLI leaves the cell empty); the
    // page's FLOP/s unrounded against the CLI's three decimals.
    cols.push(['flops', 'flops', (v) => (v === '' ? '0' : v)],
      ['gflops_per_s', 'gflops_per_s', (v, row) => (v === '' ? '' : row.__page_gflops)]);
    const t = await readTable(page, 'operators-table');
    if (t) {
      const g = t.keys.indexOf('gflops_per_s'), n = t.keys.indexOf('name');
      for (const cli of f.table) {
        const r = t.rows.find((x) => x[n] === cli.name);
        cli.__page_gflops = r && g >= 0 && r[g] !== '' && Number(r[g]).toFixed(3) === cli.gflops_per_s ? r[g] : `~${cli.gflops_per_s}`;
      }
    }
  }
  await compareTable(c, page, 'operators-table', f.table, ['name', 'name'], cols);
}

export async function checkGpu(c, page, f) {
  await compareTable(c, page, 'gpu-kernels-table', f.gpu.kernels, ['name', 'name'],
    ['calls', 'total_ns', 'avg_ns', 'min_ns', 'max_ns'].map((k) => [k, k, same]));
  if (f.gpu.copies.length) {
    await compareTable(c, page, 'gpu-copies-table', f.gpu.copies, ['kind', 'kind'],
      ['count', 'bytes', 'total_ns'].map((k) => [k, k, same]));
  } else if (await page.$('#gpu-copies-table')) {
    c.fail('gpu-copies-table absent', '`ringprof gpu` lists no copies but the page has a copies table');
  }
}

export async function checkMemory(c, page, f) {
  await compareTable(c, page, 'memory-pools-table', f.memory.pools, ['pool', 'pool'],
    ['allocs', 'frees', 'allocated_bytes', 'freed_bytes', 'net_bytes', 'peak_bytes', 'unmatched_frees']
      .map((k) => [k, k, same]));
  await compareTable(c, page, 'memory-zones-table', f.memory.zones, ['zone', 'zone'],
    [['count', 'allocs', same], ['bytes', 'allocated_bytes', same]]);
  if (f.memory.live.length) {
    await compareTable(c, page, 'memory-live-table', f.memory.live, ['zone', 'live_zone'],
      [['count', 'blocks', same], ['bytes', 'live_bytes', same]]);
  } else if (await page.$('#memory-live-table')) {
    c.fail('memory-live-table absent', '`ringprof memory` lists nothing live but the page has a live table');
  }
}

// The sampled heap's stacks: the same rows, estimates and sample counts.
export async function checkHeap(c, page, f) {
  await compareTable(c, page, 'heap-stacks-table', f.heap, ['stack', 'stack'],
    [['pool', 'pool', same], ['alloc_bytes', 'alloc_bytes', same], ['alloc_objects', 'alloc_objects', same],
      ['inuse_bytes', 'inuse_bytes', same], ['samples', 'samples', same]]);
}

export async function checkSamplesTable(c, page, f) {
  await compareTable(c, page, 'samples-top-table', f.samplesTop, ['function', 'function'],
    [['self', 'self', same], ['total', 'total', same], ['location', 'location', same]]);
  if (f.samplesTop.length > TOP_ROWS) c.fail('samples-top-table', `the CLI gave more than ${TOP_ROWS} rows`);
}

export async function checkRanks(c, page, f) {
  const keys = ['host', 'steps', 'step_time_median_ns', 'compute_ns', 'comm_ns', 'overlap_pct', 'idle_ns',
    'cpu_zone_ns', 'late_ns_median'];
  const rows = f.ranks.ranks.map((r) => ({ ...r, rank: json(r.rank) }));
  await compareTable(c, page, 'ranks-table', rows, ['rank', 'rank'], keys.map((k) => [k, k, json]));
}

// One chart per process with whole steps (the first 4 of `ringprof ranks`),
// one bar per step (its latest 2000), whose parts are the CLI's per-step times:
// GPU compute, GPU idle split by the time in zones (or, without GPU records,
// the step split by it).
export async function checkSteps(c, page, f) {
  const charts = await page.$$eval('svg.steps-chart', (svgs) => svgs.map((s) => ({
    pid: s.getAttribute('data-pid'),
    rects: [...s.querySelectorAll('rect')].map((r) => ({ x: Number(r.getAttribute('x')),
      step: r.getAttribute('data-step'), part: r.getAttribute('data-part'), value: r.getAttribute('data-value') })),
  })));
  const charted = f.ranks.ranks.slice(0, 4).filter((r) => r.steps > 0);
  const want = charted.map((r) => String(r.pid)).sort(), got = charts.map((ch) => ch.pid).sort();
  if (want.join() !== got.join()) {
    return c.fail('step charts', `charts for pids ${got.join(', ')}; the CLI has steps for ${want.join(', ')}`);
  }
  for (const ch of charts) {
    const what = `step chart of pid ${ch.pid} equals \`ringprof ranks --per-step\``;
    const rank = charted.find((r) => String(r.pid) === ch.pid);
    const times = [];
    for (const s of f.ranks.steps) {
      for (const t of s.times || []) if (String(t.pid) === ch.pid) times.push({ ...t, step: s.step, repeat: s.repeat });
    }
    const bars = new Map();
    for (const r of ch.rects) {
      if (!bars.has(r.x)) bars.set(r.x, { step: r.step, parts: {} });
      bars.get(r.x).parts[r.part] = r.value;
    }
    const shown = [...bars.keys()].sort((a, b) => a - b).map((x) => bars.get(x));
    const latest = times.slice(-2000);
    if (shown.length !== latest.length) {
      c.fail(what, `${shown.length} bars, ${latest.length} steps from the CLI (${times.length} in all)`);
      continue;
    }
    if (times.some((t) => t.repeat)) {  // numbers repeat: the order is the page's own; counts only
      c.ok(`${what} (${shown.length} bars; step numbers repeat, so counted only)`);
      continue;
    }
    const diffs = [];
    shown.forEach((bar, i) => {
      const t = latest[i];
      if (bar.step !== String(t.step)) diffs.push(`bar ${i} is step ${bar.step}, the CLI's step ${t.step}`);
      const parts = rank.gpu
        ? { compute: t.compute_ns, cpu: t.idle_in_zones_ns, idle: t.idle_ns - t.idle_in_zones_ns }
        : { cpu: t.in_zones_ns, idle: t.time_ns - t.in_zones_ns };
      for (const [part, ns] of Object.entries(parts)) {
        const got = bar.parts[part] === undefined ? '0' : bar.parts[part];
        if (got !== String(ns || 0)) diffs.push(`step ${t.step} ${part}: page ${got}, CLI ${ns}`);
      }
    });
    if (diffs.length) c.fail(what, diffs.slice(0, MAX_DIFFS).join('; '));
    else c.ok(`${what} (${shown.length} bars)`);
  }
}

// Click a header: the column is ordered; click again: the other way. For a
// numeric column whose values differ and for the name column.
export async function checkSorting(c, page, id) {
  const t = await readTable(page, id);
  if (!t || t.rows.length < 2) return;
  const numeric = t.keys.map((k, i) => i).filter((i) => i > 0 &&
    t.rows.every((r) => r[i] !== '' && !isNaN(Number(r[i]))) && new Set(t.rows.map((r) => r[i])).size > 1);
  const pick = [0];
  if (numeric.length) pick.push(numeric.includes(t.keys.indexOf('calls')) ? t.keys.indexOf('calls') : numeric[0]);
  for (const i of pick) {
    const key = t.keys[i], what = `${id} sorts by ${key} on a click, the other way on a second`;
    if (new Set(t.rows.map((r) => r[i])).size < 2) continue;
    const order = async () => page.evaluate((id, i, text) => {
      const v = [...document.querySelectorAll(`#${id} tbody tr:not(.more-rows)`)]
        .map((tr) => tr.children[i].getAttribute('data-value'));
      const cmp = (a, b) => (text ? a.localeCompare(b) : Number(a) - Number(b));
      let up = true, down = true;
      for (let k = 1; k < v.length; k++) {
        if (cmp(v[k - 1], v[k]) > 0) up = false;
        if (cmp(v[k - 1], v[k]) < 0) down = false;
      }
      const dir = up && !down ? 'ascending' : down && !up ? 'descending' : up ? 'constant' : 'unordered';
      return { n: v.length, dir };
    }, id, i, i === 0);
    await page.click(`#${id} th[data-key="${key}"]`);
    const first = await order();
    await page.click(`#${id} th[data-key="${key}"]`);
    const second = await order();
    if (first.n !== t.rows.length || second.n !== t.rows.length) {
      c.fail(what, `rows went from ${t.rows.length} to ${first.n}, ${second.n}`);
    } else if (!['ascending', 'descending'].includes(first.dir)) c.fail(what, `after one click: ${first.dir}`);
    else if (second.dir === first.dir || !['ascending', 'descending'].includes(second.dir)) {
      c.fail(what, `after one click ${first.dir}, after two ${second.dir}`);
    } else c.ok(`${what} (${first.dir}, then ${second.dir})`);
  }
}

// Typing in the table's filter box keeps the rows whose name holds the text.
export async function checkFilter(c, page, id) {
  const box = await page.$(`#${id}-filter`);
  const t = await readTable(page, id);
  if (!box || !t || t.rows.length < 2) return;
  const names = t.rows.map((r) => r[0]);
  const q = names[names.length - 1].slice(0, 6).toUpperCase();  // case-insensitive by the docs
  const want = names.filter((n) => n.toLowerCase().includes(q.toLowerCase())).sort();
  await box.type(q);
  const got = (await readTable(page, id)).rows.map((r) => r[0]).sort();
  await box.evaluate((i) => { i.value = ''; i.dispatchEvent(new Event('input')); });
  const back = (await readTable(page, id)).rows.length;
  const what = `${id} filters by name ('${q}': ${want.length} of ${names.length} rows)`;
  if (got.join('\n') !== want.join('\n')) c.fail(what, `shown: ${got.slice(0, 5).join(', ')} (${got.length} rows)`);
  else if (back !== names.length) c.fail(what, `after clearing the box ${back} rows, not ${names.length}`);
  else c.ok(what);
}

// The flame graph: each frame's count equals `ringprof flame`'s samples
// under its call path; a click zooms (data-zoom = the frame's path, the frame
// spans the whole width, its children in proportion, nothing outside its
// subtree but its ancestors); the root zooms out; the search marks frames.
export async function checkFlame(c, page, f) {
  if (!(await page.$('svg#flame-graph'))) return c.fail('flame graph', 'no svg#flame-graph in the samples section');
  const frames = () => page.evaluate(() => {
    const s = document.getElementById('flame-graph');
    return { full: s.getBoundingClientRect().width, zoom: s.getAttribute('data-zoom'),
      frames: [...s.querySelectorAll('g.frame')].map((g) => {
        const r = g.querySelector('rect');
        return { name: g.getAttribute('data-name'), count: g.getAttribute('data-count'),
          path: g.getAttribute('data-path'), width: r ? r.getBoundingClientRect().width : null,
          match: g.classList.contains('match') };
      }) };
  });
  const click = async (framePath) => {
    const rect = await page.evaluateHandle((p) => [...document.querySelectorAll('#flame-graph g.frame')]
      .find((g) => g.getAttribute('data-path') === p).querySelector('rect'), framePath);
    await rect.click();
  };
  const depth = (p) => p.split(';').length;
  const under = (p, q) => q.startsWith(p + ';');  // q in p's subtree
  const list = (xs, show) => xs.slice(0, 3).map(show).join(', ');

  const before = await frames();
  const bad = before.frames.filter((fr) => [fr.name, fr.count, fr.path, fr.width].includes(null));
  if (!before.frames.length || bad.length) {
    return c.fail('flame frames', `${before.frames.length} frames, ${bad.length} without data-name, data-count, ` +
      'data-path or a rect');
  }
  const root = before.frames.find((fr) => !fr.path.includes(';'));
  if (!root || root.count !== String(f.samples)) {
    c.fail('flame root equals `ringprof table --samples`',
      `root ${root && root.path} counts ${root && root.count}, the CLI ${f.samples} samples`);
  } else c.ok(`flame root equals \`ringprof table --samples\` (${f.samples} samples)`);
  if (!root) return;
  const diffs = [];
  for (const fr of before.frames) {
    if (fr === root) continue;
    const want = f.flame.get(fr.path.slice(root.path.length + 1)) || 0;
    if (fr.count !== String(want)) diffs.push(`${fr.path}: page ${fr.count}, CLI ${want}`);
  }
  if (diffs.length) c.fail('flame frames equal `ringprof flame`', diffs.slice(0, MAX_DIFFS).join('; '));
  else c.ok(`flame frames equal \`ringprof flame\` (${before.frames.length - 1} frames below the root)`);

  // The frame clicked: one narrower than the graph, with children if any has them, the widest such.
  const parent = (fr) => before.frames.some((k) => under(fr.path, k.path));
  const target = before.frames.filter((fr) => fr !== root && fr.width < before.full - 1)
    .sort((a, b) => parent(b) - parent(a) || b.width - a.width || depth(a.path) - depth(b.path))[0] ||
    before.frames.find((fr) => fr !== root);
  if (!target) return c.fail('flame zoom', 'no frame below the root to click');
  const what = `flame graph zooms on a click ('${target.path}')`;
  await click(target.path);
  const after = await frames();
  const zoomed = after.frames.find((fr) => fr.path === target.path);
  const outside = after.frames.filter((fr) => fr.path !== target.path && !under(fr.path, target.path) &&
    !under(target.path, fr.path));
  const kids = after.frames.filter((fr) => under(target.path, fr.path) && depth(fr.path) === depth(target.path) + 1);
  const off = kids.filter((k) => Math.abs(k.width - Number(k.count) / Number(target.count) * after.full) > 0.5);
  if (after.zoom !== target.path) c.fail(what, `data-zoom is '${after.zoom}'`);
  else if (!zoomed || Math.abs(zoomed.width - after.full) > 0.5) {
    c.fail(what, `the frame is ${zoomed && zoomed.width} px wide, the graph ${after.full} px`);
  } else if (outside.length) c.fail(what, `frames outside its subtree still drawn: ${list(outside, (x) => x.path)}`);
  else if (off.length) {
    c.fail(what, `children not in proportion to their counts: ${list(off, (k) => `${k.path} ${k.width} px`)}`);
  } else c.ok(`${what}: it spans ${after.full.toFixed(0)} px, ${kids.length} children in proportion`);

  await click(root.path);
  const out = await frames();
  if (out.zoom !== root.path || out.frames.length !== before.frames.length) {
    c.fail('flame graph zooms out on a click on the root',
      `data-zoom '${out.zoom}', ${out.frames.length} frames (${before.frames.length} before)`);
  } else c.ok('flame graph zooms out on a click on the root');

  // Search: the target's name, in other case; matches are exactly the frames whose name holds it.
  const q = target.name.slice(0, 8).toUpperCase();
  await page.type('input#flame-search', q);
  const searched = await frames();
  const wrong = searched.frames.filter((fr) => fr.match !== fr.name.toLowerCase().includes(q.toLowerCase()));
  const hits = searched.frames.filter((fr) => fr.match).length;
  await page.$eval('input#flame-search', (i) => { i.value = ''; i.dispatchEvent(new Event('input')); });
  const cleared = (await frames()).frames.filter((fr) => fr.match).length;
  const swhat = `flame search '${q}' marks the matching frames`;
  if (!hits || wrong.length) c.fail(swhat, `${hits} marked; wrongly marked or not: ${list(wrong, (x) => x.path)}`);
  else if (cleared) c.fail(swhat, `${cleared} frames still marked after clearing the box`);
  else c.ok(`${swhat} (${hits} frames)`);
}

// The timeline is drawn, and its link names the full trace written beside the page.
export async function checkTimeline(c, page, htmlPath) {
  const t = await page.evaluate(() => {
    const drawn = document.querySelector('#section-timeline canvas, #section-timeline svg');
    const box = drawn ? drawn.getBoundingClientRect() : { width: 0, height: 0 };
    const a = document.querySelector('#section-timeline a#perfetto-file');
    return { what: drawn && drawn.tagName.toLowerCase(), width: Math.round(box.width),
      height: Math.round(box.height), href: a && a.getAttribute('href') };
  });
  if (!t.width || !t.height) c.fail('timeline drawn', 'no canvas or svg with a size in the timeline section');
  else c.ok(`timeline drawn (${t.width}x${t.height} ${t.what})`);
  const file = t.href && path.join(path.dirname(htmlPath), t.href);
  if (!file || !fs.existsSync(file) || !fs.statSync(file).size) {
    c.fail('timeline links the trace beside the page', `link ${t.href}: no such file`);
  } else c.ok(`timeline links the trace beside the page (${t.href})`);
}

// Taken as the page first shows, in a viewport as tall as the page, so that
// no section is scrolled and the sticky navigation stays at the top.
export async function screenshots(c, page, present, dir) {
  fs.mkdirSync(dir, { recursive: true });
  const shots = [], viewport = page.viewport();
  const height = await page.evaluate(() => document.documentElement.scrollHeight);
  await page.setViewport({ ...viewport, height: Math.min(Math.max(height, viewport.height), 16000) });
  for (const id of present) {
    const el = await page.$(`#section-${id}`);
    const file = path.join(dir, `section-${id}.png`);
    await el.screenshot({ path: file });
    shots.push(file);
  }
  const whole = path.join(dir, 'page.png');
  await page.screenshot({ path: whole, fullPage: true });
  shots.push(whole);
  await page.setViewport(viewport);
  const png = Buffer.from([0x89, 0x50, 0x4e, 0x47]);
  const bad = shots.filter((s) => !fs.existsSync(s) || fs.statSync(s).size < 100 ||
    !fs.readFileSync(s).subarray(0, 4).equals(png));
  if (bad.length) c.fail('screenshots', `missing or not PNG: ${bad.join(', ')}`);
  else c.ok(`screenshots: ${shots.length} PNGs in ${dir}`);
}
