// What ran is what the page shows: after a person edits a call, its row shows the edited input,
// says who edited it, and keeps the diff from the proposal, with the card it answered heading
// the row — live, after a reload, and in a tab that never saw the edit happen.
import { expect, Page } from '@playwright/test';
import { card, login, pendingCards, send, sessionId, test, toolResults, waitLive } from './helpers';

/** Edits a pending shell card's command and submits it. */
async function editCommand(page: Page, to: string): Promise<string> {
  const pending = pendingCards(page);
  await expect(pending).toHaveCount(1);
  const id = (await pending.getAttribute('data-approval-id'))!;
  await pending.locator('[data-action=edit]').click();
  const field = pending.getByTestId('edit-input');
  await field.fill(to);
  await pending.locator('[data-action=submit-edit]').click();
  return id;
}

/** Everything the page says about the call, once run: the row and the card. */
async function expectShownAsEdited(page: Page, id: string) {
  const row = toolResults(page, 'ok');
  await expect(row).toHaveCount(1);
  await expect(row.locator('.tool-title')).toHaveText('shell: echo edited-words');
  await expect(row.getByTestId('edited-chip')).toHaveText('edited');
  await expect(row.locator('.tool-output')).toContainText('edited-words');
  // Open the row: who edited it, what the edit changed, what the agent had proposed.
  await row.locator('summary').first().click();
  await expect(row.getByTestId('edited-by')).toContainText('Edited by you');
  await expect(row.getByTestId('edited-by')).toContainText('this is what ran');
  await expect(row.getByTestId('tool-args')).toContainText('echo edited-words');
  await expect(row.getByTestId('tool-args')).not.toContainText('proposed-words');
  const rowDiff = row.getByTestId('edit-diff');
  await rowDiff.locator('summary').click();
  await expect(rowDiff).toContainText('-echo proposed-words');
  await expect(rowDiff).toContainText('+echo edited-words');
  await expect(row.getByTestId('tool-proposed-args')).toContainText('echo proposed-words');

  // The card heads the same row (issue 39.6): it says who answered; the call, the edit mark
  // and what ran are told once, on the line below it. Opened, it shows what it asked.
  const resolved = card(page, id);
  await expect(resolved).toHaveAttribute('data-decision', 'edit');
  const callRow = page.getByTestId('call-row');
  await expect(callRow).toHaveCount(1);
  await expect(callRow.getByTestId('approval-card')).toHaveAttribute('data-approval-id', id);
  await expect(callRow.getByTestId('edited-chip')).toHaveCount(1);
  await expect(callRow.getByTestId('edited-by')).toHaveCount(1);
  await expect(resolved.getByTestId('card-summary')).toHaveCount(0);
  await resolved.locator('summary.card-line').click();
  await expect(resolved.getByTestId('card-proposed-note')).toBeVisible();
  await expect(resolved.getByTestId('card-args')).toContainText('echo proposed-words');
}

test('an edited command: the row and the card show what ran, who edited it, and the diff', async ({ page, server }) => {
  await login(page, server);
  await send(page, 'run: echo proposed-words');
  const id = await editCommand(page, 'echo edited-words');
  await expectShownAsEdited(page, id);
  // The record, not the page's memory: a reload (server-rendered, then hydrated) shows the same.
  await page.reload();
  await waitLive(page);
  await expectShownAsEdited(page, id);
  // The feed carries the diff in the resolution, for any other client.
  const res = await page.request.get(`${server.url}/api/v1/sessions/${sessionId(page)}`);
  expect(res.ok()).toBeTruthy();
  const resolved = (await res.json()).events.find((e: any) => e.type === 'approval_resolved');
  expect(resolved.decision).toBe('edit');
  expect(resolved.edits).toMatchObject({ command: 'echo edited-words' });
  expect(resolved.edit_diff).toContain('-echo proposed-words\n+echo edited-words');
});

test('an edit that changes nothing says so, and a plain approval carries no edit marker', async ({ page, server }) => {
  await login(page, server);
  await send(page, 'run: echo same-words');
  const id = await editCommand(page, 'echo same-words');
  await expect(card(page, id)).toHaveAttribute('data-decision', 'edit');
  const row = toolResults(page, 'ok');
  await expect(row).toHaveCount(1);
  await row.locator('summary').first().click();
  await expect(row.getByTestId('edit-diff')).toHaveText('The edit changed nothing.');

  await send(page, 'run: echo plain-words');
  const second = pendingCards(page);
  await expect(second).toHaveCount(1);
  await second.locator('[data-action=approve]').click();
  await expect(toolResults(page, 'ok')).toHaveCount(2);
  const plain = toolResults(page, 'ok').nth(1);
  await expect(plain.getByTestId('edited-chip')).toHaveCount(0);
  await expect(plain.getByTestId('tool-edited')).toHaveCount(0);
});

test('a revised decision shows the revision as what the agent was told, the proposal folded', async ({ page, server }) => {
  await login(page, server);
  await send(page, 'ask deploy: Ship the release | Deploy **friday** at 17:00');
  const pending = pendingCards(page);
  await expect(pending).toHaveCount(1);
  const id = (await pending.getAttribute('data-approval-id'))!;
  await pending.locator('[data-action=edit]').click();
  await pending.getByTestId('edit-input').fill('Deploy monday at 09:00');
  await pending.locator('[data-action=submit-edit]').click();
  const resolved = card(page, id);
  await expect(resolved).toHaveAttribute('data-decision', 'edit');
  await resolved.locator('summary.card-line').click();
  await expect(resolved.getByTestId('card-ran')).toHaveText('Deploy monday at 09:00');
  await expect(resolved.getByTestId('edit-diff')).toContainText('+Deploy monday at 09:00');
  await expect(resolved.getByTestId('card-proposed')).not.toHaveAttribute('open', /.*/);
  await expect(resolved.getByTestId('card-proposed')).toContainText('friday');
});

test('Always allow suggests no more than the call: a command as written, a path as named', async ({ page, server }) => {
  await login(page, server);
  await send(page, 'run: rm -f /tmp/example');
  const pending = pendingCards(page);
  await expect(pending).toHaveCount(1);
  await pending.locator('[data-action=allow_always]').click();
  await expect(pending.getByTestId('rule-pattern')).toHaveValue('rm -f /tmp/example');
  await pending.locator('[data-action=deny]').click();
  await pending.locator('[data-action=submit-deny]').click();
  await expect(pendingCards(page)).toHaveCount(0);
  // A program whose subcommand names what it does gets the subcommand, no wider.
  await send(page, 'run: git status --short');
  await expect(pendingCards(page)).toHaveCount(1);
  await pendingCards(page).locator('[data-action=allow_always]').click();
  await expect(pendingCards(page).getByTestId('rule-pattern')).toHaveValue('git status *');
  await pendingCards(page).locator('[data-action=approve]').click();
  await expect(pendingCards(page)).toHaveCount(0);
  // A file: that file, not its folder or every file like it.
  await send(page, 'write notes/a*.md: x');
  await expect(pendingCards(page)).toHaveCount(1);
  await pendingCards(page).locator('[data-action=allow_always]').click();
  await expect(pendingCards(page).getByTestId('rule-pattern')).toHaveValue('notes/a[*].md');
});

test("the built-in agent's words before a call head its card, and only that call's", async ({ page, server }) => {
  await login(page, server);
  await send(page, 'say: Checking what is in the folder first.\nrun: ls\nrun: echo second');
  const first = pendingCards(page);
  await expect(first).toHaveCount(1);
  await expect(first.getByTestId('agent-says')).toHaveText('The agent says: Checking what is in the folder first.');
  await expect(first.getByTestId('card-summary')).toHaveText('shell: ls');
  await first.locator('[data-action=approve]').click();
  const second = page.locator('[data-testid=approval-card][data-state=pending]');
  await expect(second.getByTestId('card-summary')).toHaveText('shell: echo second');
  await expect(second.getByTestId('agent-says')).toHaveCount(0);
});
