// The empty screen teaches: every example it offers works as shown in the default mode (Ask),
// the plan example included — it switches the session to Plan itself and says so — and `\n`
// in an example is a line break, never a literal backslash.
import { expect, Page } from '@playwright/test';
import { login, pendingCards, test, toolResults } from './helpers';

function example(page: Page, text: string) {
  return page.getByTestId('example').filter({ hasText: text });
}

async function sendExample(page: Page, text: string) {
  await example(page, text).click();
  await expect(page.getByTestId('composer')).toHaveValue(new RegExp(`^${text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
  await page.getByTestId('send').click();
}

test('every example on the empty screen works as shown in the default mode', async ({ page, server }) => {
  await login(page, server);
  await expect(page.getByTestId('session-mode')).toHaveAttribute('data-mode', 'ask');
  await expect(page.getByTestId('example')).toHaveCount(5);

  // write: a card, approved, the file written.
  await sendExample(page, 'write notes.md: hello');
  await expect(pendingCards(page)).toHaveCount(1);
  await pendingCards(page).locator('[data-action=approve]').click();
  await expect(toolResults(page, 'ok')).toHaveCount(1);

  // read, then run: the read runs at once; the command asks first.
  await page.getByTestId('composer').fill('read notes.md');
  await page.getByTestId('send').click();
  await expect(toolResults(page, 'ok')).toHaveCount(2);
  await expect(toolResults(page, 'ok').last()).toContainText('notes.md');
  await page.getByTestId('composer').fill('run: ls -la');
  await page.getByTestId('send').click();
  await expect(pendingCards(page)).toHaveCount(1);
  await pendingCards(page).locator('[data-action=approve]').click();
  await expect(toolResults(page, 'ok')).toHaveCount(3);

  // ask: a decision card with the proposal rendered.
  await page.getByTestId('composer').fill('ask prep_plan: Drop null rows | Remove rows where **price** is empty');
  await page.getByTestId('send').click();
  await expect(pendingCards(page)).toHaveCount(1);
  await expect(pendingCards(page).getByTestId('proposal').locator('strong')).toHaveText('price');
  await pendingCards(page).locator('[data-action=approve]').click();
  await expect(pendingCards(page)).toHaveCount(0);
});

test('the plan example switches the session to Plan, says so, and its \\n is a line break', async ({ page, server }) => {
  await login(page, server);
  await sendExample(page, 'propose plan: 1. read the data');
  // Filled as shown: one line, with the demo's `\n` in it.
  await expect(page.getByTestId('session-mode')).toHaveAttribute('data-mode', 'plan');
  await expect(page.getByTestId('mode-picker')).toHaveValue('plan');
  const plan = pendingCards(page);
  await expect(plan).toHaveCount(1);
  const proposal = plan.getByTestId('proposal');
  await expect(proposal.locator('li')).toHaveCount(2);
  await expect(proposal).not.toContainText('\\n');
  await expect(proposal.locator('h1, h2, h3')).toHaveCount(0);
});

test('choosing the plan example says the session is now in Plan before anything is sent', async ({ page, server }) => {
  await login(page, server);
  await example(page, 'propose plan').click();
  await expect(page.getByTestId('example-note')).toContainText('Plan mode');
  await expect(page.getByTestId('session-mode')).toHaveAttribute('data-mode', 'plan');
  await expect(page.getByTestId('composer')).toHaveValue('propose plan: 1. read the data\\n2. clean it');
});
