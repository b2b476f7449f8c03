// Answering cards from the keyboard and the bulk bar: Deny all asks once for a reason and
// answers every pending card but the sensitive ones; a key acts only on a chosen card;
// `e` opens the editor, `A` the Always allow panel, `j`/`k` move between pending cards; none
// of the keys fire while typing in the composer, and no key anywhere changes the approval mode.
import { expect, Page } from '@playwright/test';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { card, login, pendingCards, send, sessionId, test, toolResults, waitHydrated, waitLive, pressKey, keysReady } from './helpers';

/** The approval ids of the pending cards, in page order. */
async function pendingIds(page: Page, n: number): Promise<string[]> {
  await expect(pendingCards(page)).toHaveCount(n);
  return pendingCards(page).evaluateAll((els) => els.map((e) => e.getAttribute('data-approval-id')!));
}

/** Takes focus away from any field, so page-level keys are not "typing". */
async function leaveFields(page: Page) {
  await page.locator('.chat-header').click({ position: { x: 5, y: 5 } });
  await expect(page.getByTestId('composer')).not.toBeFocused();
}

test('Deny all answers both pending cards denied, and neither call runs', async ({ page, server }) => {
  await login(page, server);
  await send(page, 'parallel:\nwrite deny-a.txt: 1\nwrite deny-b.txt: 2');
  const ids = await pendingIds(page, 2);
  const bar = page.getByTestId('bulk-bar');
  await expect(bar).toContainText('2 pending');
  await bar.locator('[data-action=deny-all]').click();
  // It asks once for a reason, which every card's agent reads; nothing is denied before.
  const ask = page.getByTestId('bulk-reason');
  await expect(ask).toContainText('Deny 2 cards');
  for (const id of ids) await expect(card(page, id)).toHaveAttribute('data-state', 'pending');
  await page.getByTestId('bulk-reason-input').fill('not these files');
  await ask.locator('[data-action=confirm-deny-all]').click();
  await expect(page.getByTestId('bulk-said')).toHaveText('2 denied');
  for (const id of ids) {
    await expect(card(page, id)).toHaveAttribute('data-state', 'resolved');
    await expect(card(page, id)).toHaveAttribute('data-decision', 'deny');
  }
  await expect(bar).toHaveCount(0);
  await expect(toolResults(page, 'denied')).toHaveCount(2);
  await expect(toolResults(page, 'ok')).toHaveCount(0);
  await expect(page).toHaveTitle('Countersign');
  expect(existsSync(join(server.workspace, 'deny-a.txt'))).toBe(false);
  expect(existsSync(join(server.workspace, 'deny-b.txt'))).toBe(false);
  // Both denials carry the one reason.
  const audit = await page.request.get(`${server.url}/api/v1/audit?action=gate_resolved`);
  const resolved = await audit.json();
  expect(resolved).toHaveLength(2);
  for (const entry of resolved) expect(JSON.stringify(entry.detail)).toContain('not these files');
});

// A safety-floor card is never answered in bulk: the bar says how many it leaves out, and
// the summary after says what it did.
test('Approve all leaves the sensitive card for the person, and says so', async ({ page, server }) => {
  await login(page, server);
  await send(page, 'parallel:\nwrite bulk-plain.txt: 1\nrun: rm -rf bulk-gone');
  await pendingIds(page, 2);
  const floorCard = pendingCards(page).and(page.locator('.floor'));
  await expect(floorCard).toHaveCount(1);
  const floorId = (await floorCard.getAttribute('data-approval-id'))!;
  const bar = page.getByTestId('bulk-bar');
  await expect(bar.getByTestId('bulk-sensitive')).toHaveText('1 sensitive: answer it yourself');
  const approveOthers = bar.locator('[data-action=approve-all]');
  await expect(approveOthers).toHaveText('Approve the others');
  await approveOthers.click();
  await expect(page.getByTestId('bulk-said')).toHaveText('1 approved');
  // What it left is named, with a link that brings it into view and focuses it.
  await expect(page.getByTestId('left-for-you')).toHaveText(/^Left for you: 1 sensitive card — Runs a command with `rm -rf` in it/);
  await page.getByTestId('left-for-you-link').click();
  await expect(card(page, floorId)).toBeFocused();
  await expect(card(page, floorId)).toHaveAttribute('data-state', 'pending');
  await expect(pendingCards(page)).toHaveCount(1);
  await expect(toolResults(page, 'ok')).toHaveCount(1);
  expect(readFileSync(join(server.workspace, 'bulk-plain.txt'), 'utf8')).toBe('1');
  // The person answers it on its own.
  await card(page, floorId).locator('[data-action=deny]').click();
  await card(page, floorId).locator('[data-action=submit-deny]').click();
  await expect(card(page, floorId)).toHaveAttribute('data-decision', 'deny');
});

// On load nothing is chosen, so a stray key answers nothing; `j` chooses the first card,
// visibly (focus ring, `aria-current`), on the session page and on the Inbox alike.
test('after a reload a single key answers nothing until a card is chosen', async ({ page, server }) => {
  await login(page, server);
  await send(page, 'parallel:\nwrite stray-1.txt: 1\nwrite stray-2.txt: 2');
  let [one, two] = await pendingIds(page, 2);
  for (const where of [page.url(), `${server.url}/inbox`]) {
    await page.goto(where);
    if (where.endsWith('/inbox')) await waitHydrated(page);
    else await waitLive(page);
    // This page's own order (a batch's cards can be opened in either order; the Inbox lists
    // them oldest first): `j` below starts at this page's first.
    [one, two] = await pendingIds(page, 2);
    // Nothing typed into: keys reach the page.
    await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
    for (const id of [one, two]) await expect(card(page, id)).not.toHaveAttribute('aria-current', 'true');
    for (const key of ['a', 'd', 'e', 'Shift+A']) await pressKey(page, key);
    for (const id of [one, two]) {
      await expect(card(page, id)).toHaveAttribute('data-state', 'pending');
      await expect(card(page, id).getByTestId('edit-input')).toHaveCount(0);
      await expect(card(page, id).getByTestId('deny-reason')).toHaveCount(0);
      await expect(card(page, id).getByTestId('rule-pattern')).toHaveCount(0);
    }
  }
  const waiting = await page.request.get(`${server.url}/api/v1/approvals?status=pending`);
  expect(await waiting.json()).toHaveLength(2);
  // `j` chooses the first card, not the second.
  await pressKey(page, 'j');
  await expect(card(page, one)).toBeFocused();
  await expect(card(page, one)).toHaveAttribute('aria-current', 'true');
  await pressKey(page, 'a');
  // The Inbox drops an answered card: the server says which one was answered.
  await expect.poll(async () => {
    const res = await page.request.get(`${server.url}/api/v1/approvals?status=pending`);
    return (await res.json()).map((g: any) => g.approval_id);
  }).toEqual([two]);
  await expect(card(page, one)).toHaveCount(0);
  await expect(card(page, two)).toHaveAttribute('data-state', 'pending');
});

test('a sensitive card needs `a` twice; one press only asks', async ({ page, server }) => {
  await login(page, server);
  await send(page, 'run: rm -rf twice-gone');
  const [id] = await pendingIds(page, 1);
  const pending = card(page, id);
  await expect(pending).toHaveClass(/\bfloor\b/);
  await expect(pending).toBeFocused();
  await pressKey(page, 'a');
  await expect(pending.getByTestId('card-confirm')).toContainText('press a again');
  await expect(pending).toHaveAttribute('data-state', 'pending');
  await expect(pending.locator('[data-action=approve]')).not.toContainText('Sending');
  await pressKey(page, 'a');
  await expect(card(page, id)).toHaveAttribute('data-decision', 'approve');
  await expect(toolResults(page, 'ok')).toHaveCount(1);
});

test("a sensitive card's two `a`s must follow each other: a key between starts over", async ({ page, server }) => {
  await login(page, server);
  await send(page, 'run: rm -rf typed-over');
  const [id] = await pendingIds(page, 1);
  const pending = card(page, id);
  await expect(pending).toBeFocused();
  // Typing "can't allow" at a focused sensitive card: an `a`, other letters, an `a`.
  await pressKey(page, 'a');
  await expect(pending.getByTestId('card-confirm')).toBeVisible();
  await page.keyboard.press('x');
  await expect(pending.getByTestId('card-confirm')).toHaveCount(0);
  await page.keyboard.press('a');
  await expect(pending.getByTestId('card-confirm')).toBeVisible();
  // Escape is a key between too.
  await page.keyboard.press('Escape');
  await expect(pending.getByTestId('card-confirm')).toHaveCount(0);
  // A held `a` is one press, not two.
  await page.keyboard.down('a');
  await page.keyboard.down('a');
  await page.keyboard.down('a');
  await page.keyboard.up('a');
  await expect(pending.getByTestId('card-confirm')).toBeVisible();
  await expect(pending).toHaveAttribute('data-state', 'pending');
  await expect(toolResults(page, 'ok')).toHaveCount(0);
});

test('a card that takes focus on its own takes no key for a moment', async ({ page, server }) => {
  await login(page, server);
  await send(page, 'run: echo arrived');
  const [id] = await pendingIds(page, 1);
  const pending = card(page, id);
  // Just arrived and focused: a letter typed now was meant for something else.
  await expect(pending).toHaveAttribute('data-keys', 'settling');
  await expect(pending).toBeFocused();
  await page.keyboard.press('a');
  await keysReady(page);
  await expect(pending).toHaveAttribute('data-state', 'pending');
  await expect(toolResults(page, 'ok')).toHaveCount(0);
  // Then the keys are the card's.
  await page.keyboard.press('a');
  await expect(card(page, id)).toHaveAttribute('data-decision', 'approve');
});

test('`e` opens the editor on the focused card; Esc closes it; the edited call runs', async ({ page, server }) => {
  await login(page, server);
  await send(page, 'write keyed-edit.md: draft');
  const [id] = await pendingIds(page, 1);
  const pending = card(page, id);
  // With the composer empty, the new card takes focus.
  await expect(pending).toBeFocused();
  await pressKey(page, 'e');
  const field = pending.getByTestId('edit-input');
  await expect(field).toBeVisible();
  await expect(field).toBeFocused();
  await expect(field).toHaveValue('draft');
  await pressKey(page, 'Escape');
  await expect(pending.getByTestId('edit-input')).toHaveCount(0);
  await expect(pending).toHaveAttribute('data-state', 'pending');

  await pending.focus();
  await pressKey(page, 'e');
  await pending.getByTestId('edit-input').fill('final');
  await pending.locator('[data-action=submit-edit]').click();
  await expect(card(page, id)).toHaveAttribute('data-decision', 'edit');
  await expect(toolResults(page, 'ok')).toHaveCount(1);
  expect(readFileSync(join(server.workspace, 'keyed-edit.md'), 'utf8')).toBe('final');
});

// With two cards pending, the keys act on the card that has focus (Tab, a click, the automatic
// focus on a newly arrived card), never on another one.
test('the keys act on the card that has focus, not on the first pending one', async ({ page, server }) => {
  await login(page, server);
  await send(page, 'parallel:\nwrite focus-a.txt: a\nwrite focus-b.txt: b');
  const [a, b] = await pendingIds(page, 2);
  await card(page, b).focus();
  await expect(card(page, b)).toBeFocused();
  await pressKey(page, 'e');
  await expect(card(page, b).getByTestId('edit-input')).toBeVisible();
  await expect(card(page, a).getByTestId('edit-input')).toHaveCount(0);
  await pressKey(page, 'Escape');
  await card(page, b).focus();
  await pressKey(page, 'a');
  await expect(card(page, b)).toHaveAttribute('data-state', 'resolved');
  await expect(card(page, a)).toHaveAttribute('data-state', 'pending');
});

// j/k move the keyboard focus with the highlight: one card is ever the selected one.
test('`j` moves the keyboard focus to the next pending card', async ({ page, server }) => {
  await login(page, server);
  await send(page, 'parallel:\nwrite jf-1.txt: 1\nwrite jf-2.txt: 2');
  const [one, two] = await pendingIds(page, 2);
  await card(page, one).focus();
  await pressKey(page, 'j');
  await expect(card(page, two)).toBeFocused();
  await pressKey(page, 'k');
  await expect(card(page, one)).toBeFocused();
});

/** Sends a command, and opens Always allow on its card with `A`: the pattern field has focus. */
async function openAlwaysAllow(page: Page, command: string) {
  await send(page, command);
  const [id] = await pendingIds(page, 1);
  const pending = card(page, id);
  await expect(pending).toBeFocused();
  await pressKey(page, 'Shift+A');
  const pattern = pending.getByTestId('rule-pattern');
  await expect(pattern).toBeFocused();
  return { id, pending, pattern };
}

test('`A` opens Always allow; confirming creates the rule and resolves the card allow_always', async ({ page, server }) => {
  await login(page, server);
  const { id, pending, pattern } = await openAlwaysAllow(page, 'run: echo always one');
  await expect(pattern).toHaveValue('echo *');
  await expect(pending.getByTestId('rule-scope')).toHaveValue('session');
  await pending.locator('[data-action=submit-always]').click();

  await expect(card(page, id)).toHaveAttribute('data-state', 'resolved');
  await expect(card(page, id)).toHaveAttribute('data-decision', 'allow_always');
  await expect(toolResults(page, 'ok')).toHaveCount(1);
  const res = await page.request.get(`${server.url}/api/v1/rules`);
  expect(res.ok()).toBeTruthy();
  const rules = await res.json();
  expect(rules).toHaveLength(1);
  expect(rules[0]).toMatchObject({ tool: 'shell', pattern: 'echo *', scope: 'session' });
  // The rule covers the next echo: it runs without a card.
  await send(page, 'run: echo always two');
  await expect(toolResults(page, 'ok')).toHaveCount(2);
  await expect(pendingCards(page)).toHaveCount(0);
});

test('Enter in the Always allow pattern confirms it, as the button does', async ({ page, server }) => {
  await login(page, server);
  const { id, pattern } = await openAlwaysAllow(page, 'run: echo enter one');
  await pattern.fill('echo enter *');
  await page.keyboard.press('Enter');
  await expect(card(page, id)).toHaveAttribute('data-decision', 'allow_always');
  const rules = await (await page.request.get(`${server.url}/api/v1/rules`)).json();
  expect(rules).toHaveLength(1);
  expect(rules[0]).toMatchObject({ tool: 'shell', pattern: 'echo enter *' });
});

test('`j` and `k` move between pending cards, and the keys act on the one moved to', async ({ page, server }) => {
  await login(page, server);
  await send(page, 'parallel:\nwrite j-1.txt: 1\nwrite j-2.txt: 2\nwrite j-3.txt: 3');
  const [one, two, three] = await pendingIds(page, 3);
  // The cards of one batch appear in the order their gates opened: name the file by the card.
  const firstFile = (await card(page, one).getByTestId('card-summary').textContent())!.match(/write_file (\S+)/)![1];
  const active = /\bactive\b/;
  // Select the first card; from there j/k move the selection (focus and highlight together).
  await card(page, one).focus();
  await expect(card(page, one)).toHaveClass(active);

  await pressKey(page, 'j');
  await expect(card(page, two)).toHaveClass(active);
  await expect(card(page, two)).toBeFocused();
  await expect(card(page, one)).not.toHaveClass(active);
  await pressKey(page, 'j');
  await expect(card(page, three)).toHaveClass(active);
  // At the last card `j` stays there.
  await pressKey(page, 'j');
  await expect(card(page, three)).toHaveClass(active);
  await pressKey(page, 'k');
  await expect(card(page, two)).toHaveClass(active);
  await expect(card(page, three)).not.toHaveClass(active);

  // `a` approves the card moved to, and only that one.
  await pressKey(page, 'a');
  await expect(card(page, two)).toHaveAttribute('data-state', 'resolved');
  await expect(card(page, two)).toHaveAttribute('data-decision', 'approve');
  await expect(card(page, one)).toHaveAttribute('data-state', 'pending');
  await expect(card(page, three)).toHaveAttribute('data-state', 'pending');

  // Once the highlighted card is answered nothing is chosen: `j` starts at the first pending
  // card again.
  await pressKey(page, 'j');
  await expect(card(page, one)).toHaveClass(active);
  await expect(card(page, one)).toHaveAttribute('aria-current', 'true');
  await pressKey(page, 'j');
  await expect(card(page, three)).toHaveClass(active);
  await pressKey(page, 'k');
  await expect(card(page, one)).toHaveClass(active);
  await pressKey(page, 'd');
  await expect(card(page, one).getByTestId('deny-reason')).toBeFocused();
  await pressKey(page, 'Enter');
  await expect(card(page, one)).toHaveAttribute('data-decision', 'deny');
  await expect(card(page, three)).toHaveAttribute('data-state', 'pending');
  await leaveFields(page);
  // With the chosen card answered, `a` acts on nothing until a card is chosen again.
  await pressKey(page, 'a');
  await expect(card(page, three).locator('[data-action=approve]')).not.toContainText('Sending');
  await expect(card(page, three)).toHaveAttribute('data-state', 'pending');
  await pressKey(page, 'j');
  await expect(card(page, three)).toBeFocused();
  await pressKey(page, 'a');
  await expect(card(page, three)).toHaveAttribute('data-decision', 'approve');
  await expect(toolResults(page, 'ok')).toHaveCount(2);
  await expect(toolResults(page, 'denied')).toHaveCount(1);
  expect(existsSync(join(server.workspace, firstFile))).toBe(false);
});

test('no card key fires while typing in the composer', async ({ page, server }) => {
  await login(page, server);
  await send(page, 'parallel:\nwrite typed-1.txt: 1\nwrite typed-2.txt: 2');
  const [one, two] = await pendingIds(page, 2);
  const composer = page.getByTestId('composer');
  await composer.click();
  await expect(composer).toBeFocused();
  // Whichever card was selected before typing stays selected: j/k typed are text.
  const selected = async () => Promise.all([one, two].map((id) => card(page, id).getAttribute('class')));
  const before = await selected();
  await page.keyboard.type('a e d A j k');
  await expect(composer).toHaveValue('a e d A j k');
  await expect(composer).toBeFocused();
  for (const id of [one, two]) {
    const c = card(page, id);
    await expect(c).toHaveAttribute('data-state', 'pending');
    await expect(c.getByTestId('edit-input')).toHaveCount(0);
    await expect(c.getByTestId('deny-reason')).toHaveCount(0);
    await expect(c.getByTestId('rule-pattern')).toHaveCount(0);
    // `a` did not send an answer either (the button would say "Sending…").
    await expect(c.locator('[data-action=approve]')).toBeEnabled();
    await expect(c.locator('[data-action=approve]')).not.toContainText('Sending');
  }
  expect(await selected()).toEqual(before);
  const waiting = await page.request.get(`${server.url}/api/v1/approvals?status=pending`);
  expect((await waiting.json()).map((g: any) => g.approval_id).sort()).toEqual([one, two].sort());
  // Control: the same key outside the composer does act.
  await card(page, one).focus();
  await pressKey(page, 'd');
  await expect(card(page, one).getByTestId('deny-reason')).toBeVisible();
  await expect(toolResults(page, 'ok')).toHaveCount(0);
  // Leave the composer text alone; answer the cards so the turn ends.
  await page.getByTestId('bulk-bar').locator('[data-action=approve-all]').click();
  await expect(toolResults(page, 'ok')).toHaveCount(2);
});

test('no key changes the mode; Yolo takes a second, deliberate click, and the message goes with that mode', async ({ page, server }) => {
  await login(page, server);
  const composer = page.getByTestId('composer');
  const picker = page.getByTestId('mode-picker');
  const badge = page.getByTestId('session-mode');
  await expect(picker).toHaveValue('ask');
  // Shift+Tab is "previous field" again, and no other key in the composer touches the mode.
  await composer.click();
  await pressKey(page, 'Shift+Tab');
  await expect(composer).not.toBeFocused();
  for (const key of ['Shift+Tab', 'Tab', 'Alt+m', 'Control+m', 'Shift+ArrowUp', 'Alt+y']) {
    await composer.click();
    await pressKey(page, key);
  }
  // Away from any field too.
  await page.locator('.chat-header').click({ position: { x: 5, y: 5 } });
  for (const key of ['Shift+Tab', 'm', 'y', 'Shift+Y']) {
    await pressKey(page, key);
  }
  // On the picker itself, the keys that step a closed select (arrows, Home/End, paging,
  // type-ahead) open its list instead of changing the mode.
  for (const key of ['ArrowDown', 'ArrowUp', 'ArrowRight', 'End', 'PageDown', 'y', 'a']) {
    await picker.focus();
    await pressKey(page, key);
    await page.keyboard.press('Escape');
    await expect(picker).toHaveValue('ask');
  }
  await expect(picker).toHaveValue('ask');
  await expect(badge).toHaveAttribute('data-mode', 'ask');
  await composer.fill('');
  // Choosing Yolo only asks: the safe answer is focused, and Enter keeps the mode.
  await picker.selectOption('yolo');
  const confirm = page.getByTestId('yolo-confirm');
  await expect(confirm).toContainText('run without asking');
  await expect(confirm.locator('[data-action=keep-mode]')).toBeFocused();
  await expect(badge).toHaveAttribute('data-mode', 'ask');
  await page.keyboard.press('Enter');
  await expect(confirm).toHaveCount(0);
  await expect(picker).toHaveValue('ask');
  await expect(badge).toHaveAttribute('data-mode', 'ask');
  // A second, deliberate click switches; the session remembers it.
  await picker.selectOption('yolo');
  await confirm.locator('[data-action=confirm-yolo]').click();
  await expect(badge).toHaveAttribute('data-mode', 'yolo');
  await expect.poll(async () => {
    const res = await page.request.get(`${server.url}/api/v1/sessions/${sessionId(page)}`);
    return (await res.json()).session.approval_mode;
  }).toBe('yolo');
  await page.reload();
  await waitLive(page);
  await expect(picker).toHaveValue('yolo');
  // In yolo a command runs without a card.
  await send(page, 'run: echo chosen');
  await expect(toolResults(page, 'ok')).toContainText('echo chosen');
  await expect(pendingCards(page)).toHaveCount(0);
  await expect(page.getByTestId('user-message').last()).toContainText('Yolo');
  // Leaving Yolo needs no confirmation.
  await picker.selectOption('ask');
  await expect(badge).toHaveAttribute('data-mode', 'ask');
});
