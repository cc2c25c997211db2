// ringprof report: draws the page from the data the tools embedded in the
// page (the JSON script element "ringprof-data"). No libraries, no network:
// plain DOM.
// Each section is drawn only when the data has it; every table sorts on a
// click on its header and filters by name. Cells keep their raw value in
// data-value, so what the page shows can be checked against the CLI.
(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('ringprof-data').textContent);
  var app = document.getElementById('app');

  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === 'text') e.textContent = attrs[k];
      else e.setAttribute(k, attrs[k]);
    });
    (children || []).forEach(function (c) { if (c) e.appendChild(c); });
    return e;
  }

  // The same units the CLI's text uses: "850 ns", "12.5 µs", "2.51 ms", "1.20 s".
  function dur(ns) {
    var a = Math.abs(ns), s = ns < 0 ? '-' : '';
    if (a >= 1e9) return s + (a / 1e9).toFixed(2) + ' s';
    if (a >= 1e6) return s + (a / 1e6).toFixed(2) + ' ms';
    if (a >= 1e3) return s + (a / 1e3).toFixed(1) + ' µs';
    return s + a.toFixed(0) + ' ns';
  }
  function bytes(b) {
    var a = Math.abs(b), u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'], i = 0;
    while (a >= 1024 && i < u.length - 1) { a /= 1024; i++; }
    return (b < 0 ? '-' : '') + (i ? a.toFixed(1) : a.toFixed(0)) + ' ' + u[i];
  }
  function pct(v) { return (v * 100).toFixed(1) + '%'; }
  var formats = {
    text: function (v) { return v === null || v === undefined ? '' : String(v); },
    count: function (v) { return v === null ? '-' : Number(v).toLocaleString('en-US'); },
    dur: function (v) { return v === null ? '-' : dur(v); },
    bytes: function (v) { return v === null ? '-' : bytes(v); },
    pct: function (v) { return v === null ? '-' : pct(v); },
    pct100: function (v) { return v === null ? '-' : v.toFixed(1) + '%'; },
    gbps: function (v) { return v === null ? '-' : v.toFixed(2) + ' GB/s'; },
    gflops: function (v) { return v === null ? '-' : v.toFixed(3) + ' GFLOP/s'; },
    source: function (v) { return v === null || v === undefined ? '' : String(v); }
  };

  // "file:line" of an absolute path → a link that opens it in VS Code at that
  // line (the TensorBoard plugin's "jump to source"); null for anything else.
  function sourceLink(where) {
    var m = /^(\/.+):(\d+)$/.exec(where || '');
    return m ? 'vscode://file' + encodeURI(m[1]) + ':' + m[2] : null;
  }

  // A table: columns [{key, label, type}], sorted by `sortKey` descending at
  // first; a click on a header sorts by it (again: the other way).
  var kRows = 500;
  function table(id, columns, rows, sortKey) {
    var state = { key: sortKey, desc: true, filter: '', all: false };
    var tbody = el('tbody');
    var heads = columns.map(function (c) {
      var th = el('th', { text: c.label, 'data-key': c.key });
      th.addEventListener('click', function () {
        state.desc = state.key === c.key ? !state.desc : c.type !== 'text';
        state.key = c.key;
        draw();
      });
      return th;
    });
    var t = el('table', { class: 'data', id: id }, [el('thead', {}, [el('tr', {}, heads)]), tbody]);
    var filter = el('input', { class: 'filter', type: 'search', placeholder: 'filter by name', id: id + '-filter' });
    filter.addEventListener('input', function () { state.filter = filter.value.toLowerCase(); draw(); });
    function draw() {
      heads.forEach(function (th) {
        th.className = th.getAttribute('data-key') === state.key ? (state.desc ? 'sorted-desc' : 'sorted-asc') : '';
      });
      var shown = rows.filter(function (r) {
        return !state.filter || String(r[columns[0].key]).toLowerCase().indexOf(state.filter) >= 0;
      });
      shown.sort(function (a, b) {
        var x = a[state.key], y = b[state.key];
        var c = typeof x === 'string' ? String(x).localeCompare(String(y)) : (x === null ? -1 : y === null ? 1 : x - y);
        return state.desc ? -c : c;
      });
      tbody.textContent = '';
      // The first kRows rows are drawn (a page stays quick with thousands of
      // names); a click on the last row draws the rest. Sorting and the
      // filter always work on every row.
      shown.slice(0, state.all ? shown.length : kRows).forEach(function (r) {
        tbody.appendChild(el('tr', {}, columns.map(function (c) {
          var v = r[c.key];
          var link = c.type === 'source' ? sourceLink(v) : null;
          if (link) return el('td', { 'data-value': String(v) }, [el('a', { href: link, text: String(v) })]);
          return el('td', { text: formats[c.type](v), 'data-value': v === null ? '' : String(v) });
        })));
      });
      if (!state.all && shown.length > kRows) {
        var more = el('td', { colspan: columns.length, class: 'more', text: 'show all ' + shown.length + ' rows' });
        more.addEventListener('click', function () { state.all = true; draw(); });
        tbody.appendChild(el('tr', { class: 'more-rows' }, [more]));
      }
    }
    draw();
    return el('div', {}, [filter, t]);
  }

  function facts(pairs) {
    var dl = el('dl', { class: 'facts' });
    pairs.forEach(function (p) {
      dl.appendChild(el('dt', { text: p[0] }));
      dl.appendChild(el('dd', { text: p[1], class: p[2] || '' }));
    });
    return dl;
  }

  var sections = [];
  function section(id, title, children) {
    sections.push([id, title]);
    app.appendChild(el('section', { id: 'section-' + id }, [el('h2', { text: title })].concat(children)));
  }

  var o = data.overview;
  var procs = o.processes.map(function (p) {
    return p.command + ' (pid ' + p.pid + (p.host ? ', ' + p.host : '') + (p.rank ? ', ' + p.rank : '') + ')';
  });
  document.title = 'ringprof report: ' + (o.processes.length === 1 ? procs[0] : o.processes.length + ' processes');
  section('overview', 'Overview', [facts([
    ['processes', procs.join('; ') || '-'],
    ['time range', dur(o.duration_ns)],
    ['events', formats.count(o.events) + ' in ' + o.files + ' file(s), ' + bytes(o.stored_bytes) + ' on disk'],
    ['ring drops', formats.count(o.dropped_ring) + ' events', o.dropped_ring ? 'warn' : ''],
    ['write drops', formats.count(o.dropped_io) + ' events', o.dropped_io ? 'warn' : ''],
    ['CPU samples', formats.count(o.samples) + (o.samples_lost ? ' (' + o.samples_lost + ' lost)' : ''), o.samples_lost ? 'warn' : ''],
    ['GPU records', formats.count(o.gpu_records) + (o.gpu_dropped_records ? ' (' + o.gpu_dropped_records + ' dropped by CUPTI)' : ''), o.gpu_dropped_records ? 'warn' : ''],
    ['damaged segments', formats.count(o.damaged_segments), o.damaged_segments ? 'warn' : ''],
    ['levels and marks', o.marks.length ? o.marks.map(function (m) {
      return m.text + ' at ' + dur(m.at_ns) + (o.processes.length > 1 ? ' (pid ' + m.pid + ')' : '');
    }).join('; ') : 'none marked'],
    ['detailed windows', o.windows.length ? o.windows.map(function (w) {
      return 'window ' + w.id + ': ' + dur(w.begin_ns) + ' – ' + (w.end_ns === null ? 'the end' : dur(w.end_ns)) +
        (w.triggered ? ' (triggered)' : '') + (o.processes.length > 1 ? ' (pid ' + w.pid + ')' : '');
    }).join('; ') + (o.windows_total > o.windows.length ? '; and ' + (o.windows_total - o.windows.length) + ' more' : '') : 'none']
  ])]);

  // Findings: known problems the rules found (docs/report.md#findings), most
  // severe first, each with its evidence and what to do.
  var found = data.findings || [];
  section('findings', 'Findings', found.length ? found.map(function (f) {
    var figs = Object.keys(f.figures).map(function (k) { return el('span', { class: 'fig', 'data-name': k, text: k + ' ' + f.figures[k] }); });
    return el('div', { class: 'finding ' + f.severity, 'data-rule': f.rule, 'data-severity': f.severity }, [
      el('h3', {}, [el('span', { class: 'sev', text: f.severity }), document.createTextNode(' ' + f.title)]),
      el('p', { text: f.evidence }),
      el('p', { class: 'advice', text: 'What to do: ' + f.advice }),
      figs.length ? el('details', {}, [el('summary', { text: 'figures' })].concat(figs)) : null]);
  }) : [el('p', { class: 'none', text: 'No known problem found by the rules (docs/report.md lists them).' })]);

  // Step time breakdown: one stacked bar per step whose parts add up to the
  // step, each instant counted once, in this order of precedence: kernels
  // computing, communication not hidden under them, copies and sets under
  // neither, then with the GPU idle: the host in zones (some zone open on
  // some thread), and idle in both. Without GPU records: in zones, or not.
  var SVG = 'http://www.w3.org/2000/svg';
  function svg(tag, attrs, children) {
    var e = document.createElementNS(SVG, tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    (children || []).forEach(function (c) { if (c) e.appendChild(c); });
    return e;
  }
  var PARTS = [['compute', 'GPU compute', '#2f6fde', true], ['comm', 'communication not hidden', '#e8833a', true],
    ['memory', 'copies and sets alone', '#3aa655', true], ['cpu', 'GPU idle, CPU in zones', '#9b6bd3', true],
    ['idle', 'GPU idle, no zone open', '#c9ced8', true], ['cpu', 'CPU in zones', '#9b6bd3', false],
    ['idle', 'no zone open', '#c9ced8', false]];
  function stepParts(st, gpu) {
    // The tools keep each part within the step; Math.max guards the drawing.
    if (!gpu) return { cpu: st.in_zones_ns, idle: Math.max(0, st.time_ns - st.in_zones_ns) };
    var exposed = st.comm_ns - st.overlap_ns, busy = st.time_ns - st.idle_ns;
    return { compute: st.compute_ns, comm: exposed, memory: Math.max(0, busy - st.compute_ns - exposed),
      cpu: st.idle_in_zones_ns, idle: Math.max(0, st.idle_ns - st.idle_in_zones_ns) };
  }
  function stepChart(p) {
    var W = 1000, H = 180, n = p.steps.length, bw = W / n;
    var max = Math.max.apply(null, p.steps.map(function (s) { return s.time_ns; })) || 1;
    var chart = svg('svg', { viewBox: '0 0 ' + W + ' ' + (H + 20), width: '100%', class: 'steps-chart', 'data-pid': p.pid });
    var mine = PARTS.filter(function (part) { return part[3] === p.gpu; });
    p.steps.forEach(function (st, i) {
      var parts = stepParts(st, p.gpu), y = H;
      mine.forEach(function (part) {
        var v = parts[part[0]];
        if (!v) return;
        var h = v / max * H;
        y -= h;
        chart.appendChild(svg('rect', { x: i * bw, y: y, width: Math.max(bw - (bw > 3 ? 1 : 0), 0.5), height: h,
          fill: part[2], 'data-step': st.step, 'data-part': part[0], 'data-value': v },
          [svg('title', {}, [document.createTextNode('step ' + st.step + ': ' + part[1] + ' ' + dur(v) +
            ' of ' + dur(st.time_ns) + '; zones\' self time, all threads, ' + dur(st.cpu_zone_ns))])]));
      });
    });
    var axis = svg('text', { x: 0, y: H + 16, 'font-size': 12, fill: '#5b6475' });
    axis.textContent = 'steps ' + p.steps[0].step + '–' + p.steps[n - 1].step + '; tallest ' + dur(max);
    chart.appendChild(axis);
    var legend = el('div', { class: 'legend' }, mine.map(function (part) {
      return el('span', {}, [el('i', { style: 'background:' + part[2] }), document.createTextNode(part[1])]);
    }));
    var who = p.rank >= 0 ? 'rank ' + p.rank + ' (pid ' + p.pid + ')' : 'pid ' + p.pid;
    return el('div', {}, [el('h3', { text: who + (p.shown_from ? ', its latest ' + n + ' steps' : '') }), legend, chart]);
  }
  if (data.steps && data.steps.length) section('steps', 'Step time', data.steps.map(stepChart));

  var ops = data.operators;
  if (ops.rows.length) {
    var cols = [{ key: 'name', label: 'Name', type: 'text' }, { key: 'calls', label: 'Calls', type: 'count' },
      { key: 'total_ns', label: 'Total', type: 'dur' }, { key: 'self_ns', label: 'Self', type: 'dur' },
      { key: 'avg_ns', label: 'Avg', type: 'dur' }, { key: 'min_ns', label: 'Min', type: 'dur' },
      { key: 'max_ns', label: 'Max', type: 'dur' }];
    if (ops.has_gpu) cols.push({ key: 'gpu_self_ns', label: 'Self GPU', type: 'dur' }, { key: 'gpu_total_ns', label: 'GPU', type: 'dur' });
    if (ops.has_memory) cols.push({ key: 'self_mem', label: 'Self mem', type: 'bytes' }, { key: 'mem', label: 'Mem', type: 'bytes' });
    if (ops.has_flops) {
      // Achieved FLOP/s: FLOPs over the time of the calls that carried them (FLOP per ns = GFLOP/s).
      ops.rows.forEach(function (r) { r.gflops_per_s = r.flops && r.flops_ns ? r.flops / r.flops_ns : null; });
      cols.push({ key: 'flops', label: 'FLOPs', type: 'count' }, { key: 'gflops_per_s', label: 'FLOP/s', type: 'gflops' });
    }
    section('operators', 'Operators', [
      el('p', { class: 'muted', text: formats.count(ops.zones) + ' zones, ' + dur(ops.sum_self_ns) + ' of self time.' }),
      table('operators-table', cols, ops.rows, 'total_ns')]);
  }

  var g = data.gpu;
  if (g) {
    var devices = g.devices.map(function (d) {
      return ['GPU ' + d.device + ' (pid ' + d.pid + (d.name ? ', ' + d.name : '') + ')',
        pct(d.utilization) + ' busy, ' + d.kernels + ' kernels' +
        (d.sm_efficiency === null ? '' : ', SM efficiency ' + pct(d.sm_efficiency)) +
        (d.achieved_occupancy === null ? '' : ', achieved occupancy ' + pct(d.achieved_occupancy))];
    });
    section('gpu', 'GPU', [facts(devices),
      el('h3', { text: 'Kernels' }),
      table('gpu-kernels-table', [{ key: 'name', label: 'Kernel', type: 'text' }, { key: 'calls', label: 'Calls', type: 'count' },
        { key: 'total_ns', label: 'Total', type: 'dur' }, { key: 'avg_ns', label: 'Avg', type: 'dur' },
        { key: 'min_ns', label: 'Min', type: 'dur' }, { key: 'max_ns', label: 'Max', type: 'dur' }], g.kernels, 'total_ns'),
      g.copies.length ? el('h3', { text: 'Copies' }) : null,
      g.copies.length ? table('gpu-copies-table', [{ key: 'kind', label: 'Direction', type: 'text' },
        { key: 'count', label: 'Copies', type: 'count' }, { key: 'bytes', label: 'Bytes', type: 'bytes' },
        { key: 'total_ns', label: 'Time', type: 'dur' }, { key: 'gb_per_s', label: 'Bandwidth', type: 'gbps' }],
        g.copies, 'total_ns') : null]);
  }

  // A chart over time: one line per series, `values` one per bucket from
  // `begin` (ns, relative to the recording's first event), `bucket` ns wide.
  var COLORS = ['#2f6fde', '#e8833a', '#3aa655', '#9c4fd6', '#d64f6e', '#1fa5a5', '#8a6d3b', '#5b6475'];
  function timeChart(id, series, bucket, yMax, yFormat) {
    var W = 1000, H = 160, n = series.length ? series[0].values.length : 0;
    var top = yMax || Math.max.apply(null, series.map(function (s) { return Math.max.apply(null, s.values.concat([0])); })) || 1;
    var chart = svg('svg', { viewBox: '0 0 ' + W + ' ' + (H + 20), width: '100%', class: 'time-chart', id: id });
    chart.appendChild(svg('line', { x1: 0, y1: H, x2: W, y2: H, stroke: '#d9dee7' }));
    series.forEach(function (s, k) {
      var pts = [];
      s.values.forEach(function (v, i) {
        var y = H - Math.max(0, v) / top * H;
        pts.push((i / n * W).toFixed(1) + ',' + y.toFixed(1), ((i + 1) / n * W).toFixed(1) + ',' + y.toFixed(1));
      });
      chart.appendChild(svg('polyline', { points: pts.join(' '), fill: 'none', stroke: COLORS[k % COLORS.length],
        'stroke-width': 1.5, 'data-series': s.label }, [svg('title', {}, [document.createTextNode(s.label)])]));
    });
    var axis = svg('text', { x: 0, y: H + 16, 'font-size': 12, fill: '#5b6475' });
    axis.textContent = '0 – ' + dur(bucket * n) + ' from the start; top of the chart ' + yFormat(top);
    chart.appendChild(axis);
    var legend = el('div', { class: 'legend' }, series.map(function (s, k) {
      return el('span', {}, [el('i', { style: 'background:' + COLORS[k % COLORS.length] }), document.createTextNode(s.label)]);
    }));
    return el('div', {}, [legend, chart]);
  }

  if (g && g.utilization_over_time && g.utilization_over_time.devices.length) {
    var u = g.utilization_over_time, many = u.devices.some(function (d) { return d.pid !== u.devices[0].pid; });
    document.getElementById('section-gpu').insertBefore(el('div', {}, [el('h3', { text: 'Utilization over time' }),
      timeChart('gpu-utilization-chart', u.devices.map(function (d) {
        return { label: 'GPU ' + d.device + (many ? ' (pid ' + d.pid + ')' : '') + ': ' + pct(d.busy_ns / u.range_ns) + ' busy',
          values: d.busy };
      }), u.bucket_ns, 1, pct)]), document.querySelector('#section-gpu h3'));
  }

  var m = data.memory;
  if (m) {
    var mt = m.timeline, pids = {};
    mt.lines.forEach(function (l) { pids[l.pid] = 1; });
    var several = Object.keys(pids).length > 1;
    var peaks = m.pools.map(function (p) {
      return [p.pool, 'peak ' + bytes(p.peak_bytes) + ', ' + formats.count(p.allocs) + ' allocations, net ' + bytes(p.net_bytes) +
        (p.unmatched_frees ? ', ' + p.unmatched_frees + ' frees of blocks allocated before the window' : '')];
    });
    section('memory', 'Memory', [facts(peaks),
      mt.bucket_ns ? el('h3', { text: 'Live bytes over time (from the window\'s start)' }) : null,
      mt.bucket_ns ? timeChart('memory-chart', mt.lines.map(function (l) {
        return { label: l.pool + (several ? ' (pid ' + l.pid + ')' : ''), values: l.high };
      }), mt.bucket_ns, 0, bytes) : null,
      el('h3', { text: 'Pools' }),
      table('memory-pools-table', [{ key: 'pool', label: 'Pool', type: 'text' }, { key: 'allocs', label: 'Allocs', type: 'count' },
        { key: 'frees', label: 'Frees', type: 'count' }, { key: 'allocated_bytes', label: 'Allocated', type: 'bytes' },
        { key: 'freed_bytes', label: 'Freed', type: 'bytes' }, { key: 'net_bytes', label: 'Net', type: 'bytes' },
        { key: 'peak_bytes', label: 'Peak', type: 'bytes' }, { key: 'unmatched_frees', label: 'Unmatched frees', type: 'count' }],
        m.pools, 'peak_bytes'),
      el('h3', { text: 'Zones that allocate most' }),
      table('memory-zones-table', [{ key: 'zone', label: 'Zone', type: 'text' }, { key: 'count', label: 'Allocs', type: 'count' },
        { key: 'bytes', label: 'Allocated', type: 'bytes' }], m.zones, 'bytes'),
      el('h3', { text: 'Still live at the end, by allocating zone' }),
      m.live.length ? table('memory-live-table', [{ key: 'zone', label: 'Zone', type: 'text' },
        { key: 'count', label: 'Blocks', type: 'count' }, { key: 'bytes', label: 'Bytes', type: 'bytes' }], m.live, 'bytes')
        : el('p', { text: 'nothing' })]);
  }

  // The sampled heap (ringprof/heap.h): the stacks that allocate most,
  // estimates weighed back from one allocation per `interval` bytes.
  var hp = data.heap;
  if (hp) {
    section('heap', 'Heap profile (sampled)', [
      el('p', { text: formats.count(hp.samples) + ' allocations sampled, one per ' + bytes(hp.interval) +
        ' allocated on average; the figures estimate every allocation. ringprof pprof --heap writes them for go tool pprof.' }),
      table('heap-stacks-table', [{ key: 'stack', label: 'Stack (leaf first)', type: 'text' }, { key: 'pool', label: 'Pool', type: 'text' },
        { key: 'alloc_bytes', label: 'Allocated', type: 'bytes' }, { key: 'alloc_objects', label: 'Allocs', type: 'count' },
        { key: 'inuse_bytes', label: 'In use at the end', type: 'bytes' }, { key: 'samples', label: 'Samples', type: 'count' }],
        hp.stacks, 'alloc_bytes')]);
  }

  // The flame graph: the merged call tree, root at the top. A click on a
  // frame zooms to it (it spans the width; its ancestors stay above it); the
  // root zooms back out. The search marks matching frames and says what
  // share of the samples they hold.
  var sm = data.samples;
  function flameGraph(f, total) {
    var nodes = f.nodes.map(function (n, i) {
      return { i: i, name: f.names[n[0]], parent: n[1], total: n[2], self: n[3], kids: [], depth: 0 };
    });
    nodes.forEach(function (n) {
      if (n.i === 0) return;
      nodes[n.parent].kids.push(n);
      n.depth = nodes[n.parent].depth + 1;
    });
    nodes.forEach(function (n) { n.path = n.i === 0 ? n.name : nodes[n.parent].path + ';' + n.name; });
    var maxDepth = nodes.reduce(function (m, n) { return Math.max(m, n.depth); }, 0);  // no spread: trees can be huge
    var W = 1200, RH = 18, H = (maxDepth + 1) * RH;
    var chart = svg('svg', { id: 'flame-graph', viewBox: '0 0 ' + W + ' ' + H, width: '100%', class: 'flame' });
    var search = el('input', { id: 'flame-search', class: 'filter', type: 'search', placeholder: 'search functions' });
    var status = el('span', { class: 'muted', id: 'flame-status' });
    var zoomed = nodes[0];
    function frame(n, x, w, dim) {
      var g = svg('g', { class: 'frame' + (dim ? ' dim' : ''), 'data-name': n.name, 'data-count': n.total, 'data-path': n.path,
        transform: 'translate(' + x.toFixed(2) + ',' + n.depth * RH + ')' }, [
        svg('rect', { x: 0, y: 0, width: w, height: RH - 1, rx: 2 }),
        svg('title', {}, [document.createTextNode(n.name + ': ' + n.total + ' samples (' + pct(n.total / total) + '), self ' + n.self)])]);
      if (w > 40) {
        var t = svg('text', { x: 4, y: RH - 5 });
        t.textContent = n.name.length * 7 > w - 8 ? n.name.slice(0, Math.max(0, Math.floor((w - 8) / 7) - 1)) + '…' : n.name;
        g.appendChild(t);
      }
      g.addEventListener('click', function () { zoom(n); });
      chart.appendChild(g);
    }
    function draw() {
      chart.textContent = '';
      for (var a = zoomed; ; a = nodes[a.parent]) {
        frame(a, 0, W, a !== zoomed);
        if (a.i === 0) break;
      }
      (function place(n, x, scale) {
        var at = x;
        n.kids.forEach(function (k) {
          var w = k.total * scale;
          if (w >= 0.5) {
            frame(k, at, w, false);
            place(k, at, scale);
          }
          at += w;
        });
      })(zoomed, 0, W / zoomed.total);
      chart.setAttribute('data-zoom', zoomed.path);
      mark();
    }
    function zoom(n) { zoomed = n === zoomed && n.i !== 0 ? nodes[n.parent] : n; draw(); }
    function mark() {
      var q = search.value.toLowerCase(), hit = 0;
      chart.querySelectorAll('g.frame').forEach(function (g) {
        var yes = q && g.getAttribute('data-name').toLowerCase().indexOf(q) >= 0;
        g.classList.toggle('match', !!yes);
      });
      if (q) {
        // Samples under a matching frame, each counted once (the outermost match on its path).
        (function count(n) {
          if (n.name.toLowerCase().indexOf(q) >= 0 && n.i !== 0) { hit += n.total; return; }
          n.kids.forEach(count);
        })(nodes[0]);
      }
      status.textContent = q ? ' matches: ' + hit + ' samples (' + pct(hit / total) + ')' : '';
    }
    search.addEventListener('input', mark);
    draw();
    return el('div', {}, [el('div', {}, [search, status]), el('div', { class: 'flame-box' }, [chart]),
      f.subtrees_left_out ? el('p', { class: 'muted', text: f.subtrees_left_out + ' call paths with under 0.05% of the samples are not drawn.' }) : null]);
  }
  if (sm) {
    section('samples', 'CPU samples', [
      el('p', { class: 'muted', text: formats.count(sm.samples) + ' samples' + (sm.period_ns ? ', one per ' + dur(sm.period_ns) + ' of CPU time' : '') +
        (sm.samples_lost ? '; ' + formats.count(sm.samples_lost) + ' lost' : '') + '. Click a frame to zoom, the top frame to zoom out.' }),
      flameGraph(sm.flame, sm.samples),
      el('h3', { text: 'Top functions' }),
      table('samples-top-table', [{ key: 'function', label: 'Function', type: 'text' }, { key: 'location', label: 'Where', type: 'text' },
        { key: 'self', label: 'Self samples', type: 'count' }, { key: 'total', label: 'Total samples', type: 'count' }], sm.top, 'self'),
      sm.python && sm.python.length ? el('h3', { text: 'Python functions' }) : null,
      sm.python && sm.python.length ? el('p', { class: 'muted', text: 'Self: the samples whose innermost Python frame ' +
        'is the function, whatever native code ran below it. A source file opens in VS Code at that line.' }) : null,
      sm.python && sm.python.length ? table('samples-python-table', [{ key: 'function', label: 'Function', type: 'text' },
        { key: 'location', label: 'Source', type: 'source' }, { key: 'self', label: 'Self samples', type: 'count' },
        { key: 'total', label: 'Total samples', type: 'count' }], sm.python, 'self') : null]);
  }

  // The timeline: the busiest threads' zones (nested by depth) and each GPU's
  // busy spans, on a canvas. Wheel zooms around the pointer, dragging pans,
  // a double click resets; hovering names the zone.
  var tl = data.timeline;
  function timelineView(t) {
    var end = 1;
    t.lanes.forEach(function (l) { l.spans.forEach(function (s) { if (s[1] > end) end = s[1]; }); });
    var RH = 14, LABEL = 180, lanes = t.lanes.map(function (l) {
      var depth = 0;
      l.spans.forEach(function (s) { if (s[3] > depth) depth = s[3]; });
      return { lane: l, rows: Math.min(depth, 7) + 1 };
    });
    var height = lanes.reduce(function (h, l) { return h + l.rows * RH + 8; }, 20);
    var canvas = el('canvas', { id: 'timeline-canvas', class: 'timeline', height: height });
    var tip = el('div', { class: 'tip' });
    var view = { from: 0, to: end }, drag = null;
    function colour(name) {
      var h = 0;
      for (var i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) >>> 0;
      return 'hsl(' + (h % 360) + ',55%,62%)';
    }
    function draw() {
      var w = canvas.clientWidth || 1000;
      canvas.width = w;
      var c = canvas.getContext('2d'), span = view.to - view.from, px = (w - LABEL) / span, y = 20;
      c.clearRect(0, 0, w, height);
      c.font = '11px system-ui, sans-serif';
      c.fillStyle = '#5b6475';
      c.fillText(dur(view.from) + ' – ' + dur(view.to) + ' from the start', LABEL, 12);
      lanes.forEach(function (L) {
        c.fillStyle = '#1d2330';
        c.fillText(L.lane.label.slice(0, 28), 2, y + 11);
        L.lane.spans.forEach(function (s) {
          if (s[1] < view.from || s[0] > view.to) return;
          var x0 = LABEL + Math.max(0, (s[0] - view.from) * px), x1 = LABEL + Math.min(w - LABEL, (s[1] - view.from) * px);
          var name = L.lane.gpu ? 'busy' : t.names[s[2]];
          c.fillStyle = L.lane.gpu ? '#2f6fde' : colour(name);
          c.fillRect(x0, y + Math.min(s[3], 7) * RH, Math.max(1, x1 - x0), RH - 1);
          if (x1 - x0 > 40) {
            c.fillStyle = '#10131a';
            c.fillText(name.slice(0, Math.floor((x1 - x0 - 4) / 6)), x0 + 2, y + Math.min(s[3], 7) * RH + 10);
          }
        });
        y += L.rows * RH + 8;
      });
    }
    function at(ev) {
      var r = canvas.getBoundingClientRect(), w = canvas.clientWidth || 1000;
      return { x: ev.clientX - r.left, y: ev.clientY - r.top, t: view.from + (ev.clientX - r.left - LABEL) / (w - LABEL) * (view.to - view.from) };
    }
    canvas.addEventListener('wheel', function (ev) {
      ev.preventDefault();
      var p = at(ev), f = ev.deltaY > 0 ? 1.25 : 0.8;
      var from = p.t - (p.t - view.from) * f, to = p.t + (view.to - p.t) * f;
      if (to - from < 1000) return;
      view = { from: Math.max(0, from), to: Math.min(end, to) };
      draw();
    }, { passive: false });
    canvas.addEventListener('mousedown', function (ev) { drag = { x: ev.clientX, from: view.from, to: view.to }; });
    window.addEventListener('mouseup', function () { drag = null; });
    canvas.addEventListener('mousemove', function (ev) {
      if (drag) {
        var w = canvas.clientWidth || 1000, d = (ev.clientX - drag.x) / (w - LABEL) * (drag.to - drag.from);
        var from = Math.max(0, drag.from - d), len = drag.to - drag.from;
        view = { from: Math.min(from, Math.max(0, end - len)), to: Math.min(end, Math.min(from, Math.max(0, end - len)) + len) };
        draw();
        return;
      }
      var p = at(ev), y = 20, found = null;
      lanes.forEach(function (L) {
        if (p.y >= y && p.y < y + L.rows * RH) {
          var row = Math.floor((p.y - y) / RH);
          L.lane.spans.forEach(function (s) { if (Math.min(s[3], 7) === row && s[0] <= p.t && s[1] >= p.t) found = [L.lane, s]; });
        }
        y += L.rows * RH + 8;
      });
      tip.textContent = found ? (found[0].gpu ? found[0].label + ' busy' : t.names[found[1][2]]) + ': ' + dur(found[1][1] - found[1][0]) : '';
      tip.style.display = found ? 'block' : 'none';
      tip.style.left = (p.x + 12) + 'px';
      tip.style.top = (p.y + 12) + 'px';
    });
    canvas.addEventListener('dblclick', function () { view = { from: 0, to: end }; draw(); });
    window.addEventListener('resize', draw);
    setTimeout(draw, 0);
    var short = t.lanes.reduce(function (n, l) { return n + l.too_short; }, 0);
    var over = t.lanes.reduce(function (n, l) { return n + l.over_budget; }, 0);
    return el('div', { class: 'timeline-box' }, [canvas, tip,
      el('p', { class: 'muted', text: 'The ' + t.lanes.filter(function (l) { return !l.gpu; }).length + ' busiest threads and the busiest GPUs. ' +
        (short ? formats.count(short) + ' zones too short to see at this scale are not drawn (outermost ones show as the stretches they cover, "(short zones)"). ' : '') +
        (over ? formats.count(over) + ' more, the shortest past 4000 a thread, are left out. ' : '') +
        'Wheel: zoom; drag: pan; double click: whole range.' })]);
  }
  // The full trace opens in the Perfetto UI: the page asks for the file
  // written beside it (a page opened from disk may not read files itself),
  // opens the UI and hands it the bytes with Perfetto's postMessage protocol.
  function perfettoLink(file) {
    if (!file) return null;
    var UI = 'https://ui.perfetto.dev';
    var input = el('input', { type: 'file', accept: '.perfetto-trace,.pftrace', style: 'display:none' });
    var win = null;
    var button = el('button', { type: 'button', id: 'open-in-perfetto', text: 'Open the full trace in the Perfetto UI' });
    button.addEventListener('click', function () { input.click(); win = window.open(UI + '/#!/', 'perfetto'); });
    input.addEventListener('change', function () {
      var file = input.files[0];
      if (!file || !win) return;
      file.arrayBuffer().then(function (buf) {
        var tries = 0, timer = setInterval(function () {
          if (++tries > 100) { clearInterval(timer); return; }
          win.postMessage('PING', UI);
        }, 100);
        window.addEventListener('message', function pong(ev) {
          if (ev.source !== win || ev.data !== 'PONG') return;
          clearInterval(timer);
          window.removeEventListener('message', pong);
          win.postMessage({ perfetto: { buffer: buf, title: file.name, fileName: file.name } }, UI);
        });
      });
    });
    return el('p', {}, [button, input, document.createTextNode(' then choose '),
      el('a', { href: file, download: file, id: 'perfetto-file', text: file }),
      document.createTextNode(', written beside this page (or drop that file on ' + UI + ').')]);
  }
  if (tl) section('timeline', 'Timeline', [perfettoLink(tl.perfetto_file), timelineView(tl)]);

  var r = data.ranks;
  if (r) {
    var stragglers = r.stragglers.map(function (s) {
      return ['rank ' + s.rank, s.kind + ' (median ' + dur(s.late_ns_median) + '): ' + s.reason, 'warn'];
    });
    section('ranks', 'Ranks', [
      el('p', { class: 'muted', text: (r.job_id ? 'job ' + r.job_id + ', ' : '') + r.ranks.length + ' ranks on ' + r.hosts +
        ' host(s); clock: ' + r.clock.method }),
      table('ranks-table', [{ key: 'rank', label: 'Rank', type: 'text' }, { key: 'host', label: 'Host', type: 'text' },
        { key: 'steps', label: 'Steps', type: 'count' }, { key: 'step_time_median_ns', label: 'Step (median)', type: 'dur' },
        { key: 'compute_ns', label: 'GPU compute', type: 'dur' }, { key: 'comm_ns', label: 'Comm', type: 'dur' },
        { key: 'overlap_pct', label: 'Comm hidden', type: 'pct100' }, { key: 'idle_ns', label: 'GPU idle', type: 'dur' },
        { key: 'cpu_zone_ns', label: 'CPU in zones', type: 'dur' }, { key: 'late_ns_median', label: 'Late (median)', type: 'dur' }],
        r.ranks, 'step_time_median_ns'),
      el('h3', { text: 'Stragglers' }),
      stragglers.length ? facts(stragglers) : el('p', { text: 'none' })]);
  }

  var nav = el('nav', {}, sections.map(function (s) { return el('a', { href: '#section-' + s[0], text: s[1] }); }));
  app.insertBefore(nav, app.firstChild);
})();
