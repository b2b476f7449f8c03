// The pages opened now and then (Config, Audit, Tokens, Rules) are lazy routes: the first page
// fetches none of their code; opening one from the sidebar fetches its chunk and the page
// works; a direct load of one hydrates and works. The bundle's files are revalidated on every
// load (Cache-Control: no-cache), so an old chunk never meets a new main module.
import { expect, Page } from '@playwright/test';
import { login, test, waitHydrated } from './helpers';

/** Every wasm file the page asks for, by path. */
function recordWasm(page: Page): string[] {
  const wasm: string[] = [];
  page.on('request', (r) => {
    const path = new URL(r.url()).pathname;
    if (path.endsWith('.wasm')) wasm.push(path);
  });
  return wasm;
}

const lazyChunk = /^\/pkg\/(split_|chunk_)/;

test('the first page loads no lazy page code; opening Config and then Audit loads theirs', async ({ page, server }) => {
  const wasm = recordWasm(page);
  await login(page, server);
  expect(wasm).toContain('/pkg/countersign_bg.wasm');
  expect(wasm.filter((p) => lazyChunk.test(p))).toEqual([]);

  await page.getByTestId('nav-config').click();
  await expect(page).toHaveURL(/\/config$/);
  await expect(page.locator('[data-testid=config-row]').first()).toBeVisible();
  expect(wasm.some((p) => p.includes('split___config_route_view'))).toBe(true);
  expect(wasm.some((p) => p.includes('split___audit_route_view'))).toBe(false);
  // Every chunk's name carries its build's id: a tab running an older main module can never
  // load a newer build's chunk (it asks for its own build's names).
  for (const chunk of wasm.filter((p) => lazyChunk.test(p))) {
    expect(chunk).toMatch(/\.[0-9a-f]{16}\.wasm$/);
  }

  await page.getByTestId('nav-audit').click();
  await expect(page).toHaveURL(/\/audit$/);
  await expect(page.getByTestId('audit-verify')).toHaveAttribute('data-state', 'intact');
  expect(wasm.some((p) => p.includes('split___audit_route_view'))).toBe(true);
});

test('a lazy page loaded directly hydrates and works, and the bundle is revalidated', async ({ page, server }) => {
  await login(page, server);
  await page.goto(`${server.url}/tokens`);
  await waitHydrated(page);
  // A handler of the lazily loaded page answers: creating a token shows its secret once.
  await page.getByTestId('token-name').fill('lazy-check');
  await page.getByTestId('create-token').click();
  await expect(page.getByTestId('new-secret')).toBeVisible();

  await page.goto(`${server.url}/rules`);
  await waitHydrated(page);
  await expect(page.getByTestId('rules-empty')).toBeVisible();

  for (const file of ['countersign.js', 'countersign_bg.wasm']) {
    const res = await page.request.get(`${server.url}/pkg/${file}`);
    expect(res.status()).toBe(200);
    expect(res.headers()['cache-control']).toBe('no-cache');
  }
});

test('a lazy page whose code cannot be fetched stops the page and says so', async ({ page, server }) => {
  await login(page, server);
  await page.route(/\/pkg\/(split_|chunk_)[^/]*\.wasm$/, (route) => route.abort());
  await page.getByTestId('nav-config').click();
  const banner = page.getByTestId('page-stopped');
  await expect(banner).toBeVisible();
  await expect(banner.getByRole('link', { name: 'Reload' })).toBeVisible();
  // Nothing behind the banner takes a click or a key: every other part of the page is inert.
  const allInert = await page.evaluate(() =>
    Array.from(document.body.children)
      .filter((c) => !c.classList.contains('page-stopped'))
      .every((c) => c.hasAttribute('inert')),
  );
  expect(allInert).toBe(true);
  // The reload brings the page back once the code can be fetched again.
  await page.unroute(/\/pkg\/(split_|chunk_)[^/]*\.wasm$/);
  await banner.getByRole('link', { name: 'Reload' }).click();
  await expect(page.getByTestId('page-stopped')).toHaveCount(0);
  await page.goto(`${server.url}/config`);
  await waitHydrated(page);
  await expect(page.locator('[data-testid=config-row]').first()).toBeVisible();
});
