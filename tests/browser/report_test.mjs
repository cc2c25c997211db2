// The page `ringprof report` writes, in headless Chromium (docs/testing.md):
// it loads without console errors and fetches nothing; it has exactly the
// sections its recording has data for; its tables hold the figures `ringprof
// table`, `table --samples`, `memory`, `gpu`, `ranks` and `flame` print for
// the same recording; tables sort and filter; the flame graph zooms on a
// click and its search marks frames. Screenshots of every section and of the
// whole page go to the artifacts folder.
//
//   node tests/browser/report_test.mjs --cli BUILD/tools/ringprof --demo BUILD/examples/ringprof_demo
//     [--malloc BUILD/core/malloc/libringprof_malloc.so] [--ranks-job BUILD/examples/ringprof_ranks_job]
//     [--recording FILE_OR_DIR]... [--require-all-sections] --artifacts DIR [--chromium /usr/bin/chromium]
//
// --demo is the demo program (run here: zones, steps, CPU samples at 4 kHz,
// and with --malloc the C heap as memory events) or a recording of it;
// --ranks-job runs a 3-rank job (the ranks section); --recording adds
// recordings as they are (tests/data/v1_gpu.rpf: GPU kernels and copies,
// without a GPU). --require-all-sections fails unless every section was
// expected, and so checked, in some recording.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import puppeteer from 'puppeteer-core';
import { KNOWN_SECTIONS, expectedSections, readCli, runCli } from './cli_figures.mjs';
import * as checks from './page_checks.mjs';

const { values: opt } = parseArgs({
  options: {
    cli: { type: 'string' }, demo: { type: 'string' }, malloc: { type: 'string' }, 'ranks-job': { type: 'string' },
    recording: { type: 'string', multiple: true, default: [] }, artifacts: { type: 'string' },
    chromium: { type: 'string', default: process.env.RINGPROF_CHROMIUM || '/usr/bin/chromium' },
    'require-all-sections': { type: 'boolean', default: false },
  },
});
for (const required of ['cli', 'demo', 'artifacts']) {
  if (!opt[required]) {
    console.error(`report_test: --${required} is required (see the comment at the top of report_test.mjs)`);
    process.exit(2);
  }
}

// Every check prints one line; a failed one does not stop the others.
class Checker {
  constructor() { this.passed = 0; this.failed = []; this.group = ''; }
  ok(what) { this.passed++; console.log(`ok    ${this.group}: ${what}`); }
  fail(what, why) {
    this.failed.push(`${this.group}: ${what}: ${why}`);
    console.log(`FAIL  ${this.group}: ${what}: ${why}`);
  }
}
const c = new Checker();

// The whole run has a deadline; a hung browser fails it with a message.
const DEADLINE_S = 240;
const watchdog = setTimeout(() => {
  console.error(`report_test: still running after ${DEADLINE_S} s; giving up`);
  process.exit(1);
}, DEADLINE_S * 1000);

// What an earlier run left there is replaced, and nothing else in the folder is touched.
const artifacts = path.resolve(opt.artifacts);
const names = ['demo', 'demo-recording', 'ranks-job', 'ranks-job-recording',
  ...opt.recording.map((r) => path.basename(r).replace(/\.[^.]*$/, ''))];
for (const n of names) fs.rmSync(path.join(artifacts, n), { recursive: true, force: true });
fs.mkdirSync(artifacts, { recursive: true });

function cleanEnv(extra) {
  const env = Object.entries(process.env).filter(([k]) => !k.startsWith('RINGPROF_') && k !== 'LD_PRELOAD');
  return { ...Object.fromEntries(env), ...extra };
}

function recordings() {
  const out = [];
  if (fs.statSync(opt.demo).isDirectory()) {
    out.push({ name: 'demo', path: opt.demo });
  } else {
    const dir = path.join(artifacts, 'demo-recording');
    // A small heap interval: the demo allocates little, and the heap section needs samples.
    const env = cleanEnv({ RINGPROF_DIR: dir, RINGPROF_MODE: 'detailed', RINGPROF_DETAILED_SAMPLE_HZ: '4000',
      RINGPROF_HEAP_INTERVAL: '4K' });
    if (opt.malloc) env.LD_PRELOAD = path.resolve(opt.malloc);
    execFileSync(opt.demo, ['300'], { env, stdio: ['ignore', 'ignore', 'inherit'], timeout: 60000 });
    out.push({ name: 'demo', path: dir });
  }
  if (opt['ranks-job']) {
    const dir = path.join(artifacts, 'ranks-job-recording');
    execFileSync(opt['ranks-job'], [dir, '--world', '3', '--straggler', '1', '--steps', '30'],
      { env: cleanEnv({}), stdio: ['ignore', 'ignore', 'inherit'], timeout: 60000 });
    out.push({ name: 'ranks-job', path: dir });
  }
  opt.recording.forEach((r, i) => out.push({ name: names[4 + i], path: r }));
  return out;
}

async function checkPage(browser, rec) {
  const f = readCli(opt.cli, rec.path);
  const info = runCli(opt.cli, ['info', rec.path]);
  const dir = path.join(artifacts, rec.name);
  fs.mkdirSync(dir, { recursive: true });
  const html = path.join(dir, 'report.html');
  runCli(opt.cli, ['report', rec.path, '-o', html]);
  const expected = expectedSections(f);

  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 900 });
  const errors = [], requests = [];
  page.on('console', (m) => { if (m.type() === 'error') errors.push(`console: ${m.text()}`); });
  page.on('pageerror', (e) => errors.push(`page error: ${e.message}`));
  page.on('request', (r) => requests.push(r.url()));
  const url = pathToFileURL(html).href;
  await page.goto(url, { waitUntil: 'load', timeout: 30000 });
  await page.waitForFunction(() => document.querySelector('#app section'), { timeout: 30000 });
  // What the page deferred (the timeline draws once laid out) runs first.
  await page.evaluate(() => new Promise((done) => requestAnimationFrame(() => setTimeout(done, 0))));

  const present = await checks.checkSections(c, page, expected);
  await checks.screenshots(c, page, present, dir);
  if (present.has('overview')) await checks.checkOverview(c, page, info);
  if (present.has('findings')) await checks.checkFindings(c, page, f);
  if (present.has('steps')) await checks.checkSteps(c, page, f);
  if (present.has('operators')) await checks.checkOperators(c, page, f);
  if (present.has('gpu')) await checks.checkGpu(c, page, f);
  if (present.has('memory')) await checks.checkMemory(c, page, f);
  if (present.has('heap')) await checks.checkHeap(c, page, f);
  if (present.has('samples')) {
    await checks.checkSamplesTable(c, page, f);
    await checks.checkFlame(c, page, f);
  }
  if (present.has('timeline')) await checks.checkTimeline(c, page, html);
  if (present.has('ranks')) await checks.checkRanks(c, page, f);
  const tables = await page.$$eval('table', (ts) => ts.map((t) => t.id));
  for (const id of tables) {
    await checks.checkSorting(c, page, id);
    await checks.checkFilter(c, page, id);
  }

  // Last, so that errors raised by the clicks and typing above count too.
  if (errors.length) c.fail('no console errors', errors.slice(0, 5).join(' | '));
  else c.ok('no console errors or page errors');
  const fetched = requests.filter((u) => u !== url);
  if (fetched.length) c.fail('nothing fetched', fetched.slice(0, 5).join(', '));
  else c.ok('nothing fetched but the page itself');
  await page.close();
  return expected;
}

let browser;
const exercised = new Set();
try {
  const recs = recordings();
  browser = await puppeteer.launch({
    executablePath: opt.chromium, headless: true, timeout: 60000,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
  for (const rec of recs) {
    c.group = rec.name;
    try {
      const expected = await checkPage(browser, rec);
      for (const [id, e] of expected) if (e.yes) exercised.add(id);
    } catch (e) {
      c.fail('checks could not run', e.stack || String(e));
    }
  }
} catch (e) {
  c.group = 'setup';
  c.fail('setup', e.stack || String(e));
} finally {
  if (browser) await browser.close();
}

c.group = 'all recordings';
const unchecked = KNOWN_SECTIONS.filter((id) => !exercised.has(id));
if (opt['require-all-sections'] && unchecked.length) {
  c.fail('every section checked in some recording', `no recording has ${unchecked.join(', ')}`);
} else if (unchecked.length) {
  console.log(`note: no recording has ${unchecked.join(', ')}; those sections were not checked`);
}
clearTimeout(watchdog);
console.log(`\nreport_test: ${c.passed} checks passed, ${c.failed.length} failed; pages and screenshots in ` +
  artifacts);
if (c.failed.length) {
  console.log('failed:\n  ' + c.failed.join('\n  '));
  process.exit(1);
}
