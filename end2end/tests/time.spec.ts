// Time in words: the countdown says what happens when it runs out, the agent is told the real
// window, times read in the browser's own zone (UTC on hover) — a card's and the Inbox's also
// say how long ago (issue 39.10) — and "by you" is still you after a reload. The browser here lives in Tokyo (UTC+9, no summer time) so a UTC time cannot pass
// for a local one.
import { expect, Locator } from '@playwright/test';
import { card, login, pendingCards, send, test, toolResults, waitHydrated, waitLive } from './helpers';

test.use({ serverConfig: '[approvals]\ntimeout_secs = 25\n', timezoneId: 'Asia/Tokyo' });

/** Tokyo's `HH:MM` of an RFC 3339 UTC time. */
function tokyoClock(iso: string): string {
  const t = new Date(new Date(iso).getTime() + 9 * 3600_000);
  return `${String(t.getUTCHours()).padStart(2, '0')}:${String(t.getUTCMinutes()).padStart(2, '0')}`;
}

/** "just now · 23:02": how long ago, then Tokyo's clock; the UTC date and time on hover. */
async function expectLocalTime(when: Locator) {
  const iso = (await when.getAttribute('datetime'))!;
  await expect(when).toHaveText(new RegExp(`^(just now|\\d+ min ago) · ${tokyoClock(iso)}$`));
  const utc = iso.slice(11, 19);
  await expect(when).toHaveAttribute('title', `${iso.slice(0, 10)} ${utc} UTC`);
}

test('the countdown says what happens at zero, and times read in the browser zone', async ({ page, server }) => {
  await login(page, server);
  // A command is denied when the time runs out; a checkpoint proceeds, flagged unapproved.
  await send(page, 'run: echo on-time');
  const pending = pendingCards(page);
  await expect(pending.getByTestId('countdown')).toHaveText(/^denies in 0:(2\d|1\d|0\d)$/);
  await expect(pending.getByTestId('countdown')).toHaveAttribute('title', /^Unanswered by .* UTC, it denies$/);
  const id = (await pending.getAttribute('data-approval-id'))!;
  await pending.locator('[data-action=approve]').click();

  const resolved = card(page, id);
  await expect(resolved).toHaveAttribute('data-state', 'resolved');
  await expect(resolved.getByTestId('card-outcome')).toContainText('Approved by you, in this tab · ');
  await expectLocalTime(resolved.getByTestId('card-outcome').getByTestId('when'));
  // This tab's id is kept for the tab: after a reload the answer is still "in this tab".
  await page.reload();
  await waitLive(page);
  await expect(card(page, id).getByTestId('card-outcome')).toContainText('Approved by you, in this tab · ');
  await expectLocalTime(card(page, id).getByTestId('card-outcome').getByTestId('when'));

  await send(page, 'ask deploy: Ship the release | today');
  await expect(pendingCards(page).getByTestId('countdown')).toHaveText(/^proceeds unapproved in 0:\d\d$/);
  // Unanswered, it proceeds, and the agent is told the real window: 25 s, not "1 min".
  const row = toolResults(page, 'timeout');
  await expect(row).toHaveCount(1, { timeout: 45_000 });
  await expect(row.locator('.tool-output')).toContainText('no answer within 25 s');
});

test('the inbox, rules and audit show local times with UTC on hover', async ({ page, server }) => {
  await login(page, server);
  await send(page, 'run: echo for-the-inbox');
  await expect(pendingCards(page)).toHaveCount(1);
  await page.goto(`${server.url}/inbox`);
  await waitHydrated(page);
  await expect(page.getByTestId('inbox-item')).toHaveCount(1);
  await expectLocalTime(page.getByTestId('inbox-item').getByTestId('inbox-when').getByTestId('when'));
  await page.getByTestId('inbox-item').locator('[data-action=approve]').click();
  await page.goto(`${server.url}/audit`);
  await waitHydrated(page);
  const first = page.getByTestId('audit-row').first().getByTestId('when');
  const at = (await first.getAttribute('datetime'))!;
  await expect(first).toContainText(tokyoClock(at));
  await expect(first).toHaveAttribute('title', /UTC$/);
});
