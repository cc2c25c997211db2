// How long a page `ringprof report` wrote takes to load and draw in headless
// Chromium (Debian's chromium, driven by puppeteer-core from tests/browser):
// the page's bytes, the time to the load event (the script draws every
// section before it), and the time until the timeline's canvas has drawn
// too. Each page is loaded RUNS times in one browser; the median is printed.
//
//   node bench/report_page_load.mjs PAGE.html [RUNS]
//
// Needs `npm ci` in tests/browser (test.sh does it). docs/performance.md
// holds the figures and the commands that made the pages.
import { createRequire } from 'node:module';
import { statSync } from 'node:fs';
import { resolve } from 'node:path';

const require = createRequire(new URL('../tests/browser/package.json', import.meta.url));
const puppeteer = require('puppeteer-core');

const page_path = resolve(process.argv[2] || '');
const runs = Number(process.argv[3] || 5);
if (!process.argv[2]) {
  console.error('usage: node bench/report_page_load.mjs PAGE.html [RUNS]');
  process.exit(2);
}
const browser = await puppeteer.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu'],
});
const median = (xs) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)];
try {
  const load = [], drawn = [], errors = [];
  for (let i = 0; i < runs; i++) {
    const page = await browser.newPage();
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.setViewport({ width: 1300, height: 900 });
    await page.goto('file://' + page_path, { waitUntil: 'load' });
    // The timeline draws after the load event (setTimeout 0): wait two frames.
    const t = await page.evaluate(() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(() => {
      const nav = performance.getEntriesByType('navigation')[0];
      done({ load: nav.loadEventEnd, drawn: performance.now() });
    }))));
    load.push(t.load);
    drawn.push(t.drawn);
    await page.close();
  }
  if (errors.length) throw new Error('page errors: ' + errors.join('; '));
  const bytes = statSync(page_path).size;
  console.log(`${page_path}: ${(bytes / 1024).toFixed(0)} KiB; load event ${median(load).toFixed(0)} ms, ` +
              `drawn ${median(drawn).toFixed(0)} ms (median of ${runs})`);
} finally {
  await browser.close();
}
