// A transcript that reads like a story (issue 39.6 and 39.10): one row per call — its card,
// then what ran and its result — in the order the agent made the calls, whatever order the
// cards are answered in; an edited call marked once, and the agent's closing words naming what
// ran, not what it proposed; session titles in words with the whole message on hover; times
// that say how long ago and the local clock time. The browser lives in Tokyo (UTC+9) so a UTC
// time cannot pass for a local one.
import { expect, Locator, Page } from '@playwright/test';
import { card, login, pendingCards, send, sessionId, test, toolResults, waitHydrated, waitLive } from './helpers';

test.use({ timezoneId: 'Asia/Tokyo' });

/** Tokyo's `HH:MM` of an RFC 3339 UTC time. */
function tokyoClock(iso: string): string {
  const t = new Date(new Date(iso).getTime() + 9 * 3600_000);
  return `${String(t.getUTCHours()).padStart(2, '0')}:${String(t.getUTCMinutes()).padStart(2, '0')}`;
}

/** "just now · 23:02" (or "N min ago · …"), the clock Tokyo's, the full UTC date on hover. */
async function expectAgoAndClock(when: Locator) {
  const iso = (await when.getAttribute('datetime'))!;
  await expect(when).toHaveText(new RegExp(`^(just now|\\d+ min ago) · ${tokyoClock(iso)}$`));
  await expect(when).toHaveAttribute('title', `${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC`);
}

function rows(page: Page) {
  return page.getByTestId('call-row');
}

/** Each row's line of what ran, in page order. */
async function ranInOrder(page: Page): Promise<string[]> {
  return rows(page).locator('[data-testid=tool-result] .tool-title').allTextContents();
}

test('parallel calls answered out of order keep call order, one row each', async ({ page, server }) => {
  await login(page, server);
  const message = 'parallel:\nrun: echo one\nrun: echo two\nrun: echo three';
  await send(page, message);
  await expect(pendingCards(page)).toHaveCount(3);
  // The cards wait in call order, each heading its call's row.
  await expect(pendingCards(page).getByTestId('card-summary')).toHaveText(['shell: echo one', 'shell: echo two', 'shell: echo three']);
  await expect(rows(page)).toHaveCount(3);
  const ids = await pendingCards(page).evaluateAll((cards) => cards.map((c) => c.getAttribute('data-approval-id')!));
  // A waiting card says when it was asked: how long ago, and the local clock time.
  await expectAgoAndClock(card(page, ids[0]).getByTestId('asked-at').getByTestId('when'));

  // Answered last, first, then the middle one.
  for (const id of [ids[2], ids[0], ids[1]]) {
    await card(page, id).locator('[data-action=approve]').click();
    await expect(card(page, id)).toHaveAttribute('data-state', 'resolved');
  }
  await expect(toolResults(page, 'ok')).toHaveCount(3);
  const expectStory = async () => {
    await expect(rows(page)).toHaveCount(3);
    expect(await ranInOrder(page)).toEqual(['shell: echo one', 'shell: echo two', 'shell: echo three']);
    for (const [i, id] of ids.entries()) {
      const row = rows(page).nth(i);
      // One card and one result in each row, the card first; the call told once.
      await expect(row.getByTestId('approval-card')).toHaveCount(1);
      await expect(row.getByTestId('approval-card')).toHaveAttribute('data-approval-id', id);
      await expect(row.getByTestId('tool-result')).toHaveCount(1);
      await expect(row.getByTestId('card-summary')).toHaveCount(0);
      const order = await row.evaluate((el) => [...el.children].map((c) => c.getAttribute('data-testid')));
      expect(order).toEqual(['approval-card', 'tool-result']);
    }
    await expect(page.getByTestId('assistant-message').last()).toContainText('call by call');
  };
  await expectStory();
  // Answered times say how long ago and the local clock.
  await expectAgoAndClock(card(page, ids[0]).getByTestId('card-outcome').getByTestId('when'));
  // The page as the server renders it, then hydrated: the same rows.
  await page.reload();
  await waitLive(page);
  await expectStory();

  // The session's title is a summary in words; the whole message is on hover.
  await expect(page.getByTestId('session-title')).toHaveText('Three calls at once');
  await expect(page.getByTestId('session-title')).toHaveAttribute('title', 'parallel:⏎run: echo one⏎run: echo two⏎run: echo three');
  await expect(page.locator(`a[data-testid=session-link][href="/sessions/${sessionId(page)}"]`)).toHaveText('Three calls at once');
});

test('an edited command: one row, marked edited once, and the agent names what ran', async ({ page, server }) => {
  await login(page, server);
  await send(page, 'run: echo proposed-words');
  const pending = pendingCards(page);
  await expect(pending).toHaveCount(1);
  const id = (await pending.getAttribute('data-approval-id'))!;
  await pending.locator('[data-action=edit]').click();
  await pending.getByTestId('edit-input').fill('echo edited-words');
  await pending.locator('[data-action=submit-edit]').click();
  await expect(card(page, id)).toHaveAttribute('data-decision', 'edit');
  await expect(toolResults(page, 'ok')).toHaveCount(1);

  const expectOneEditedRow = async () => {
    await expect(rows(page)).toHaveCount(1);
    const row = rows(page);
    await expect(row.getByTestId('approval-card')).toHaveCount(1);
    await expect(row.getByTestId('tool-result')).toHaveCount(1);
    await expect(row.locator('[data-testid=tool-result] .tool-title')).toHaveText('shell: echo edited-words');
    // Marked once: one chip, one "edited by" line, for the row.
    await expect(row.getByTestId('edited-chip')).toHaveCount(1);
    await expect(row.getByTestId('edited-by')).toHaveCount(1);
    // The proposal is a click away.
    await row.locator('[data-testid=tool-result] > summary').click();
    await expect(row.getByTestId('tool-proposed')).toHaveText('proposed: shell: echo proposed-words');
    // The agent's closing words name the command that ran, not the one it proposed.
    const said = page.getByTestId('assistant-message').last();
    await expect(said).toContainText('echo edited-words');
    await expect(said).toContainText('as you edited it');
    await expect(said).not.toContainText('proposed-words');
  };
  await expectOneEditedRow();
  await page.reload();
  await waitLive(page);
  await expectOneEditedRow();
  await expect(page.getByTestId('session-title')).toHaveText('Run `echo proposed-words`');
});

test('the Inbox says how long ago a card opened and its local clock time', async ({ page, server }) => {
  await login(page, server);
  await send(page, 'run: echo for-the-inbox');
  await expect(pendingCards(page)).toHaveCount(1);
  await page.goto(`${server.url}/inbox`);
  await waitHydrated(page);
  await expect(page.getByTestId('inbox-item')).toHaveCount(1);
  await expectAgoAndClock(page.getByTestId('inbox-item').getByTestId('inbox-when').getByTestId('when'));
  // Hydrated whole (the card's own "asked" time, hidden here, is on both renders): its
  // countdown runs.
  await expect(page.getByTestId('inbox-item').getByTestId('countdown')).toHaveText(/^denies in \d+:\d\d$/);
});
