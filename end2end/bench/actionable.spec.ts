// Time to an actionable card on a phone over slow 4G: from navigation to the moment the
// card's Approve can be used. With the server-rendered form that is when the HTML has arrived
// and painted; before it, a card could only be answered once the bundle had loaded and
// hydrated (the feed reports live), which this also measures on the same load.
//
// Throttling is Chromium DevTools' "Slow 4G" preset: 562.5 ms latency, 1.44 Mbit/s down,
// 675 kbit/s up, cache disabled, a 390 × 844 screen. Prints a table; asserts nothing.
import { Page } from '@playwright/test';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { login, pendingCards, send, test } from '../tests/helpers';

const RUNS = Number(process.env.BENCH_RUNS || 3);

async function throttle(page: Page) {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Network.enable');
  await cdp.send('Network.setCacheDisabled', { cacheDisabled: true });
  await cdp.send('Network.emulateNetworkConditions', {
    offline: false,
    latency: 562.5,
    downloadThroughput: (1.44 * 1024 * 1024) / 8,
    uploadThroughput: (675 * 1024) / 8,
  });
}

async function measure(page: Page, url: string, live: (p: Page) => Promise<void>) {
  const started = Date.now();
  await page.goto(url, { waitUntil: 'commit' });
  await page.locator('[data-testid=approval-card][data-state=pending] [data-action=approve]').first().waitFor({ state: 'visible', timeout: 600_000 });
  const form = Date.now() - started;
  await live(page);
  const hydrated = Date.now() - started;
  return { form, hydrated };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

test('time to an actionable card, phone on slow 4G', async ({ browser, page, server }) => {
  await login(page, server);
  const sessionUrl = page.url();
  await send(page, 'run: echo benchmark');
  await pendingCards(page).waitFor();
  const build = readFileSync(resolve(__dirname, '../../target/site/pkg/BUILD'), 'utf8').trim().replace(/\n/g, ', ');

  const rows: string[] = [];
  for (const [name, url, ready] of [
    ['session page', sessionUrl, async (p: Page) => { await p.getByTestId('connection').and(p.locator('[data-state=live]')).waitFor({ timeout: 600_000 }); }],
    ['inbox', `${server.url}/inbox`, async (p: Page) => { await p.locator('main.page[data-hydrated=true]').waitFor({ timeout: 600_000 }); }],
  ] as const) {
    const forms: number[] = [];
    const hydrations: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const context = await browser.newContext({ viewport: { width: 390, height: 844 } });
      const phone = await context.newPage();
      await phone.goto(`${server.url}/login?token=${server.token}`);
      await throttle(phone);
      const { form, hydrated } = await measure(phone, url, ready);
      forms.push(form);
      hydrations.push(hydrated);
      await context.close();
    }
    rows.push(`| ${name} | ${median(hydrations)} ms | ${median(forms)} ms |`);
  }
  console.log(`\nTime to an actionable card (median of ${RUNS}; bundle: ${build})`);
  console.log('| page | before: answerable once hydrated | after: answerable by its form |');
  console.log('|---|---|---|');
  for (const row of rows) console.log(row);
});
