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
    pct100: function (v) { return v === null ? '-' : v.toFixed(1) + '%'; }
  };

  // A table: columns [{key, label, type}], sorted by `sortKey` descending at
  // first; a click on a header sorts by it (again: the other way).
  function table(id, columns, rows, sortKey) {
    var state = { key: sortKey, desc: true, filter: '' };
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
      shown.forEach(function (r) {
        tbody.appendChild(el('tr', {}, columns.map(function (c) {
          var v = r[c.key];
          return el('td', { text: formats[c.type](v), 'data-value': v === null ? '' : String(v) });
        })));
      });
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
    ['damaged segments', formats.count(o.damaged_segments), o.damaged_segments ? 'warn' : '']
  ])]);

  // Step time breakdown: one stacked bar per step. With GPU records the parts
  // add up to the step: kernels computing, communication not hidden under
  // them, copies and sets under neither, and idle; without, the step's time.
  var SVG = 'http://www.w3.org/2000/svg';
  function svg(tag, attrs, children) {
    var e = document.createElementNS(SVG, tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    (children || []).forEach(function (c) { if (c) e.appendChild(c); });
    return e;
  }
  var PARTS = [['compute', 'GPU compute', '#2f6fde'], ['comm', 'communication not hidden', '#e8833a'],
    ['memory', 'copies and sets alone', '#3aa655'], ['idle', 'GPU idle', '#c9ced8'], ['cpu', 'step', '#7a8599']];
  function stepParts(st, gpu) {
    if (!gpu) return { cpu: st.time_ns };
    var exposed = st.comm_ns - st.overlap_ns, busy = st.time_ns - st.idle_ns;
    return { compute: st.compute_ns, comm: exposed, memory: Math.max(0, busy - st.compute_ns - exposed), idle: st.idle_ns };
  }
  function stepChart(p) {
    var W = 1000, H = 180, n = p.steps.length, bw = W / n;
    var max = Math.max.apply(null, p.steps.map(function (s) { return s.time_ns; })) || 1;
    var chart = svg('svg', { viewBox: '0 0 ' + W + ' ' + (H + 20), width: '100%', class: 'steps-chart', 'data-pid': p.pid });
    p.steps.forEach(function (st, i) {
      var parts = stepParts(st, p.gpu), y = H;
      PARTS.forEach(function (part) {
        var v = parts[part[0]];
        if (!v) return;
        var h = v / max * H;
        y -= h;
        chart.appendChild(svg('rect', { x: i * bw, y: y, width: Math.max(bw - (bw > 3 ? 1 : 0), 0.5), height: h,
          fill: part[2], 'data-step': st.step, 'data-part': part[0], 'data-value': v },
          [svg('title', {}, [document.createTextNode('step ' + st.step + ': ' + part[1] + ' ' + dur(v) +
            ' of ' + dur(st.time_ns) + (p.gpu ? '' : '; CPU in zones ' + dur(st.cpu_zone_ns)))])]));
      });
    });
    var axis = svg('text', { x: 0, y: H + 16, 'font-size': 12, fill: '#5b6475' });
    axis.textContent = 'steps ' + p.steps[0].step + '–' + p.steps[n - 1].step + '; tallest ' + dur(max);
    chart.appendChild(axis);
    var legend = el('div', { class: 'legend' }, PARTS.filter(function (part) {
      return p.gpu ? part[0] !== 'cpu' : part[0] === 'cpu';
    }).map(function (part) {
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
        { key: 'total_ns', label: 'Time', type: 'dur' }], g.copies, 'total_ns') : null]);
  }

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
