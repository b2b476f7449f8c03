// Your answers (/answers, issue 40 point 2): the person's own answering habits, drawn from the
// same figures `GET /api/v1/stats/decisions` answers — the headline figures match it, and each
// plot's bars carry the counts it gives.
import { expect, Page } from '@playwright/test';
import { login, pendingCards, send, test, toolResults, waitHydrated } from './helpers';
import { RunningServer } from './server';

async function apiStats(page: Page, server: RunningServer) {
  const answer = await page.request.get(`${server.url}/api/v1/stats/decisions`, {
    headers: { authorization: `Bearer ${server.token}` },
  });
  expect(answer.status()).toBe(200);
  return answer.json();
}

/** The sum of the `data-count` of every element `selector` finds. */
async function counted(page: Page, selector: string): Promise<number> {
  return page.locator(selector).evaluateAll((nodes) =>
    nodes.reduce((sum, node) => sum + Number(node.getAttribute('data-count')), 0));
}

const FIGURES = ['decisions', 'approved', 'median_decide_ms', 'fast_approvals', 'longest_approve_run', 'expired'];

test('the figures and plots are the API\'s, for the decisions just made', async ({ page, server }) => {
  await login(page, server);
  // Approve, approve, deny: cards open one after another.
  await send(page, 'run: echo one');
  await pendingCards(page).locator('[data-action=approve]').click();
  await expect(toolResults(page, 'ok')).toHaveCount(1);
  await send(page, 'run: echo two');
  await pendingCards(page).locator('[data-action=approve]').click();
  await expect(toolResults(page, 'ok')).toHaveCount(2);
  await send(page, 'run: echo three');
  await pendingCards(page).locator('[data-action=deny]').click();
  await pendingCards(page).locator('[data-action=submit-deny]').click();
  await expect(pendingCards(page)).toHaveCount(0);

  const stats = await apiStats(page, server);
  expect(stats.total).toMatchObject({ decisions: 3, approved: 2, denied: 1, longest_approve_run: 2 });

  await page.getByTestId('nav-answers').click();
  await expect(page).toHaveURL(/\/answers$/);
  await waitHydrated(page);
  const total = page.getByTestId('answers-total');
  for (const name of FIGURES) {
    const value = stats.total[name] === null ? '' : String(stats.total[name]);
    await expect(total.locator(`[data-figure=${name}]`), name).toHaveAttribute('data-value', value);
  }
  await expect(total.locator('[data-figure=approved] dd')).toHaveText('67 %');

  const perDay = '[data-testid=plot-per-day] rect';
  await expect(page.locator(perDay).first()).toBeVisible();
  expect(await counted(page, `${perDay}[data-outcome=approved]`)).toBe(2);
  expect(await counted(page, `${perDay}[data-outcome=denied]`)).toBe(1);
  expect(await counted(page, '[data-testid=plot-decide-time] rect')).toBe(3);
  const buckets = stats.decide_ms_histogram.map((b: { count: number }) => String(b.count));
  expect(await page.locator('[data-testid=plot-decide-time] rect').evaluateAll((nodes) =>
    nodes.map((n) => n.getAttribute('data-count')))).toEqual(buckets);
  await expect(page.locator('[data-testid=plot-by-class] rect[data-label=exec]')).toHaveAttribute('data-count', '3');
  await expect(page.locator('[data-testid=plot-by-agent] rect[data-label=countersign]')).toHaveAttribute('data-count', '3');
  await expect(page.getByTestId('answers-by-device').locator('tbody tr')).toHaveCount(1);

  // Another period asks again: the same three decisions are in the last 7 days.
  await page.locator('[data-testid=answers-period][data-days="7"]').click();
  await expect(page.locator('[data-testid=answers-period][data-days="7"]')).toHaveAttribute('aria-pressed', 'true');
  await expect(total.locator('[data-figure=decisions]')).toHaveAttribute('data-value', '3');
});

test('with nothing decided yet the page says so', async ({ page, server }) => {
  await login(page, server);
  await page.goto(`${server.url}/answers`);
  await waitHydrated(page);
  await expect(page.getByTestId('answers-empty')).toContainText('No decisions in the last 30 days');
  await expect(page.getByTestId('answers-total').locator('[data-figure=decisions]')).toHaveAttribute('data-value', '0');
  await expect(page.getByTestId('plot-per-day')).toHaveCount(0);
});
