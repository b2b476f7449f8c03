// A gate that expired: the server answers a late click `410 gone`, the card says the approval
// expired instead of pretending it worked, and nothing runs. Gates here expire after 4 s: short,
// but long enough for the stale tab below to be rendered by the server while the gate is still
// open, even on a busy machine (measured: under 1 s); its hydration takes longer than that
// anyway, so the wait costs nothing.
import { expect } from '@playwright/test';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { card, login, pendingCards, send, sessionId, test, toolResults } from './helpers';

test.use({ serverConfig: '[approvals]\ntimeout_secs = 4\n' });

test('a click on a card whose gate expired says it expired, and nothing runs', async ({ page, context, server }) => {
  await login(page, server);
  const sessionUrl = page.url();
  // A second tab whose live feed cannot connect: it keeps showing the card as the server
  // rendered it, pending, and will not hear that the gate timed out.
  const stale = await context.newPage();
  await stale.route('**/events?**', (route) => route.abort());
  await stale.goto(sessionUrl);
  await expect(stale.getByTestId('connection')).toHaveAttribute('data-state', 'reconnecting', { timeout: 30_000 });

  await send(page, 'run: touch expired.txt');
  await expect(pendingCards(page)).toHaveCount(1);
  const id = (await pendingCards(page).getAttribute('data-approval-id'))!;
  // Rendered by the server while the gate is still open (it opened moments ago).
  await stale.reload();
  await expect(card(stale, id)).toHaveAttribute('data-state', 'pending');
  await expect(stale.getByTestId('connection')).toHaveAttribute('data-state', 'reconnecting', { timeout: 30_000 });

  // The live tab hears the timeout: the card resolves, fail closed.
  await expect(card(page, id)).toHaveAttribute('data-state', 'resolved');
  await expect(card(page, id)).toHaveAttribute('data-decision', 'timeout');
  await expect(card(page, id).getByTestId('card-outcome')).toHaveText('Timed out — not run');
  await expect(toolResults(page, 'timeout')).toHaveCount(1);

  // The stale tab's card is still pending; its countdown has run out.
  const late = card(stale, id);
  await expect(late).toHaveAttribute('data-state', 'pending');
  await expect(late.getByTestId('countdown')).toHaveText('expired');
  await late.locator('[data-action=approve]').click();
  await expect(late.getByTestId('card-notice')).toHaveText('This approval expired');
  // The buttons are usable again (no endless "Sending…").
  await expect(late.locator('[data-action=approve]')).toBeEnabled();
  await expect(late.locator('[data-action=approve]')).not.toContainText('Sending');

  // The API says the same: 410 gone, resolved by the timeout.
  const answer = await page.request.post(`${server.url}/api/v1/sessions/${sessionId(page)}/approvals/${id}`, {
    headers: { Authorization: `Bearer ${server.token}` },
    data: { decision: 'approve' },
  });
  expect(answer.status()).toBe(410);
  const body = await answer.json();
  expect(body.error.code).toBe('gone');
  expect(body.resolution.decision).toBe('timeout');

  // Nothing ran: no file, no ok result, and the server's log holds the timeout only.
  expect(existsSync(join(server.workspace, 'expired.txt'))).toBe(false);
  await expect(toolResults(page, 'ok')).toHaveCount(0);
  const sid = sessionId(page);
  const snap = await (await page.request.get(`${server.url}/api/v1/sessions/${sid}`)).json();
  const resolutions = snap.events.filter((e: any) => e.type === 'approval_resolved' && e.approval_id === id);
  expect(resolutions).toHaveLength(1);
  expect(resolutions[0].decision).toBe('timeout');
  expect(snap.events.filter((e: any) => e.type === 'tool_started')).toHaveLength(0);
  const results = snap.events.filter((e: any) => e.type === 'tool_result');
  expect(results.map((e: any) => e.status)).toEqual(['timeout']);
});
