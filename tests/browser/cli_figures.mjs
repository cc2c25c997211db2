// What the `ringprof` CLI prints about a recording, parsed: the figures the
// report page must show (`table`, `table --samples`, `memory`, `gpu`,
// `ranks`, `flame`), and from them the sections the page must have.
import { execFileSync } from 'node:child_process';

// The page's zone tables and top functions are cut to this many rows
// (tools/include/ringprof/tools/html_report.h); the CLI is asked for the same.
export const TOP_ROWS = 100;

// The sections a page can have, in the page's order (report.js).
export const KNOWN_SECTIONS = ['overview', 'steps', 'operators', 'gpu', 'memory', 'heap', 'samples', 'timeline',
  'ranks', 'findings'];

export function runCli(cli, args) {
  try {
    return execFileSync(cli, args, { encoding: 'utf8', maxBuffer: 256 << 20, timeout: 120000,
      stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) {
    throw new Error(`ringprof ${args.join(' ')} failed (status ${e.status}): ${String(e.stderr || e.message).trim()}`);
  }
}

// RFC 4180 as text_table.cpp writes it: fields quoted when they hold , " or a newline.
export function parseCsv(text) {
  const rows = [];
  let row = [], field = '', quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') { field += '"'; i++; }
      else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') { row.push(field); field = ''; }
    else if (c === '\n') { row.push(field); rows.push(row); row = []; field = ''; }
    else if (c !== '\r') field += c;
  }
  if (field !== '' || row.length) { row.push(field); rows.push(row); }
  return rows;
}

// CSV blocks (separated by a blank line) as arrays of {header: value}.
function csvBlocks(text) {
  return text.split(/\n\n/).filter((b) => b.trim()).map((block) => {
    const [header, ...rows] = parseCsv(block.trim() + '\n');
    return rows.map((r) => Object.fromEntries(header.map((h, i) => [h, r[i]])));
  });
}

// "1261.277" (format_us: whole microseconds, then exactly three digits) -> "1261277" ns, exactly.
export function usToNs(us) {
  const m = /^(\d+)\.(\d{3})$/.exec(us);
  if (!m) throw new Error(`not a microsecond figure as format_us writes it: '${us}'`);
  return String(BigInt(m[1]) * 1000n + BigInt(m[2]));
}

// `ringprof gpu` (text only): the kernel and copy tables.
function parseGpu(text) {
  const count = (label) => Number((new RegExp(`^${label}: (\\d+)`, 'm').exec(text) || [0, 0])[1]);
  const lines = text.split('\n');
  const kernels = [], copies = [];
  const kAt = lines.findIndex((l) => /^Kernels: \d+/.test(l));
  if (kAt >= 0 && count('Kernels') > 0) {
    // Name (left, may hold spaces), then 11 columns without spaces.
    const row = /^ {2}(.*?)\s+(\d+)\s+(\d+\.\d{3})\s+(\d+\.\d{3})\s+(\d+\.\d{3})\s+(\d+\.\d{3})(?:\s+\S+){6}$/;
    for (const l of lines.slice(kAt + 2, kAt + 2 + count('Kernels'))) {
      const m = row.exec(l);
      if (!m) throw new Error(`unexpected kernel row in \`ringprof gpu\`: '${l}'`);
      kernels.push({ name: m[1], calls: m[2], total_ns: usToNs(m[3]), avg_ns: usToNs(m[4]), min_ns: usToNs(m[5]),
        max_ns: usToNs(m[6]) });
    }
  }
  const cAt = lines.findIndex((l) => /^Memcpy: \d+ directions/.test(l));
  const directions = Number((/^Memcpy: (\d+) directions/m.exec(text) || [0, 0])[1]);
  if (cAt >= 0 && directions > 0) {
    for (const l of lines.slice(cAt + 2, cAt + 2 + directions)) {
      const m = /^ {2}(\S+)\s+(\d+)\s+(\d+)\s+(\d+\.\d{3})\s+\S+$/.exec(l);
      if (!m) throw new Error(`unexpected copy row in \`ringprof gpu\`: '${l}'`);
      copies.push({ kind: m[1], count: m[2], bytes: m[3], total_ns: usToNs(m[4]) });
    }
  }
  return { devices: count('Devices'), kernelNames: count('Kernels'), kernels, copies };
}

// `ringprof flame` (collapsed stacks: "a;b;c COUNT") -> samples under each
// call path "a", "a;b", "a;b;c" (the page's frame paths without the root).
function parseFlame(text) {
  const under = new Map();
  for (const line of text.split('\n')) {
    if (!line) continue;
    const sp = line.lastIndexOf(' ');
    const frames = line.slice(0, sp).split(';'), n = Number(line.slice(sp + 1));
    let path = '';
    for (const f of frames) {
      path = path ? path + ';' + f : f;
      under.set(path, (under.get(path) || 0) + n);
    }
  }
  return under;
}

export function readCli(cli, recording) {
  const f = {};
  f.table = csvBlocks(runCli(cli, ['table', '--format', 'csv', recording]))[0] || [];
  const samplesText = runCli(cli, ['table', '--samples', recording]);
  const m = /^Samples: (\d+)/m.exec(samplesText);
  if (!m) throw new Error(`\`ringprof table --samples\` printed no "Samples: N" line:\n${samplesText}`);
  f.samples = Number(m[1]);
  f.samplesTop = csvBlocks(runCli(cli, ['table', '--samples', '--top', String(TOP_ROWS), '--format', 'csv',
    recording]))[0] || [];
  f.flame = parseFlame(runCli(cli, ['flame', recording]));
  const memoryText = runCli(cli, ['memory', recording]);
  f.memoryEvents = !memoryText.startsWith('No memory events');
  const [pools = [], zones = [], live = []] = csvBlocks(runCli(cli, ['memory', '--top', String(TOP_ROWS), '--format',
    'csv', recording]));
  f.memory = { pools, zones, live };
  f.heap = csvBlocks(runCli(cli, ['memory', '--heap', '--top', String(TOP_ROWS), '--format', 'csv', recording]))[0] ||
    [];
  f.gpu = parseGpu(runCli(cli, ['gpu', recording]));
  f.ranks = JSON.parse(runCli(cli, ['ranks', '--per-step', '--format', 'json', recording]));
  f.findings = JSON.parse(runCli(cli, ['findings', '--format', 'json', recording]));
  return f;
}

// The sections the page must have, each with the reason, from what the CLI
// says the recording holds (report_data.cpp draws a section only when the
// recording has its data).
export function expectedSections(f) {
  const ranked = f.ranks.ranks.filter((r) => r.rank !== null && r.rank >= 0).length;
  const charted = f.ranks.ranks.slice(0, 4).filter((r) => r.steps > 0);
  const gpu = f.gpu.devices > 0 || f.gpu.kernelNames > 0;
  const rules = {
    overview: [true, 'always'],
    steps: [charted.length > 0, `\`ringprof ranks\`: ${charted.length} of the first 4 processes with whole steps`],
    operators: [f.table.length > 0, `\`ringprof table\`: ${f.table.length} rows`],
    gpu: [gpu, `\`ringprof gpu\`: ${f.gpu.devices} devices, ${f.gpu.kernelNames} kernels`],
    memory: [f.memoryEvents, `\`ringprof memory\`: ${f.memoryEvents ? 'memory events' : 'no memory events'}`],
    heap: [f.heap.length > 0, `\`ringprof memory --heap\`: ${f.heap.length} stacks`],
    samples: [f.samples > 0, `\`ringprof table --samples\`: ${f.samples} samples`],
    // The busiest threads' zones and every GPU's busy spans (report_timeline.h).
    timeline: [f.table.length > 0 || gpu, `zones in \`ringprof table\` or a GPU in \`ringprof gpu\``],
    ranks: [ranked > 1, `\`ringprof ranks\`: ${ranked} ranked processes`],
    // The page states what the rules found, or that they found nothing.
    findings: [true, 'always'],
  };
  return new Map(Object.entries(rules).map(([id, [yes, why]]) => [id, { yes, why }]));
}
