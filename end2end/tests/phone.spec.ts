// Phone first, on a 390 × 844 touch screen: a pending card's every action is on the first
// screen and not under the composer (which folds to one line while a card waits), key hints
// are gone, and the Rules, Audit and Tokens tables become one block per row, actions in view.
import { expect, Locator, Page } from '@playwright/test';
import { pendingCards, send, test, toolResults, waitHydrated, waitLive } from './helpers';

test.use({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });

/** On screen, and what a tap at its centre lands on (not the composer over it). */
async function expectTappable(page: Page, target: Locator, scroll = false) {
  if (scroll) await target.scrollIntoViewIfNeeded();
  const box = (await target.boundingBox())!;
  expect(box, 'laid out').not.toBeNull();
  const [cx, cy] = [box.x + box.width / 2, box.y + box.height / 2];
  expect(cx).toBeGreaterThan(0);
  expect(cx).toBeLessThan(390);
  expect(cy).toBeGreaterThan(0);
  expect(cy).toBeLessThan(844);
  const hit = await target.evaluate((el, [x, y]) => {
    const at = document.elementFromPoint(x, y);
    return !!at && (at === el || el.contains(at));
  }, [cx, cy]);
  expect(hit, 'nothing covers it').toBe(true);
}

async function expectNoSidewaysScroll(page: Page) {
  const wide = await page.evaluate(() => document.documentElement.scrollWidth);
  expect(wide).toBeLessThanOrEqual(390);
}

test('a waiting card: every action on the first screen, the composer folded, no key hints', async ({ page, server }) => {
  await page.goto(`${server.url}/login?token=${server.token}`);
  await waitLive(page);
  // Some history first, so the card is not alone at the top of an empty page.
  await send(page, 'list');
  await expect(toolResults(page, 'ok')).toHaveCount(1);
  await send(page, 'write notes/phone.md: a line written from the phone test\\nand a second one');
  const card = pendingCards(page);
  await expect(card).toHaveCount(1);
  await expect(page.getByTestId('composer-box')).toHaveAttribute('data-folded', 'true');
  await page.waitForTimeout(300); // the transcript's scroll to the new card
  for (const action of ['approve', 'edit', 'deny', 'allow_always']) {
    await expectTappable(page, card.locator(`[data-action=${action}]`));
  }
  await expect(card.locator('kbd').first()).toBeHidden();
  await expectNoSidewaysScroll(page);
  // Touching the folded composer opens it; leaving it folds it again, actions back in view;
  // once the card is answered it stays open.
  await page.getByTestId('composer').tap();
  await expect(page.getByTestId('mode-picker')).toBeVisible();
  await page.getByTestId('composer').blur();
  await expect(page.getByTestId('mode-picker')).toBeHidden();
  await expectTappable(page, card.locator('[data-action=approve]'));
  await card.locator('[data-action=approve]').tap();
  await expect(page.getByTestId('composer-box')).toHaveAttribute('data-folded', 'false');
});

test('Rules, Audit and Tokens read as one block per row with their actions in view', async ({ page, server }) => {
  await page.goto(`${server.url}/login?token=${server.token}`);
  await waitLive(page);
  await send(page, 'run: git status --short --branch --untracked-files=all');
  await pendingCards(page).locator('[data-action=allow_always]').tap();
  await pendingCards(page).locator('[data-action=submit-always]').tap();
  await expect(toolResults(page)).toHaveCount(1);

  await page.goto(`${server.url}/rules`);
  await waitHydrated(page);
  const rule = page.getByTestId('rule-row').first();
  await expect(rule).toBeVisible();
  await expectTappable(page, rule.getByTestId('revoke-rule'), true);
  await expectNoSidewaysScroll(page);

  await page.goto(`${server.url}/tokens`);
  await waitHydrated(page);
  await page.getByTestId('token-name').fill('a-phone-with-a-long-name');
  await page.getByTestId('token-scope').selectOption('approve');
  await page.getByTestId('create-token').tap();
  const token = page.locator('[data-testid=token-row][data-token=a-phone-with-a-long-name]');
  await expectTappable(page, token.getByTestId('revoke-token'), true);
  await expectNoSidewaysScroll(page);

  await page.goto(`${server.url}/audit`);
  await waitHydrated(page);
  await expect(page.getByTestId('audit-row').first()).toBeVisible();
  await expectNoSidewaysScroll(page);
});
