// What the page shows is what runs, and only what the credential may use: a card whose
// command hides a right-to-left override or a zero-width space writes them out and says so;
// a phone logged in with an `approve` token sees the Inbox and its cards, and none of the
// controls its scope cannot use.
import { expect } from '@playwright/test';
import { card, login, newSession, pendingCards, send, test, waitHydrated, waitLive } from './helpers';

test('hidden characters in a card are written out and flagged', async ({ page, request, server }) => {
  await login(page, server);
  await newSession(page);
  // The demo agent runs `run: …` lines: a command whose text would read backwards on screen.
  await send(page, 'run: echo \u202Etxt.exe\u202C ok\u200B');
  const pending = pendingCards(page);
  await expect(pending).toHaveCount(1);
  await expect(pending.getByTestId('card-hidden')).toBeVisible();
  await expect(pending.getByTestId('card-summary')).toContainText('⟨U+202E⟩txt.exe⟨U+202C⟩');
  await expect(pending.getByTestId('card-args')).toContainText('⟨U+200B⟩');
  await expect(pending.getByTestId('card-summary')).not.toContainText('\u202E');
  // An ordinary card carries no such flag.
  const id = await pending.getAttribute('data-approval-id');
  await pending.locator('[data-action=approve]').click();
  await expect(card(page, id!)).toHaveAttribute('data-state', 'resolved');
  await send(page, 'run: echo plain');
  await expect(pendingCards(page)).toHaveCount(1);
  await expect(pendingCards(page).getByTestId('card-hidden')).toHaveCount(0);
  void request;
});

test('a phone with an approve token sees the cards and no control it cannot use', async ({ browser, page, request, server }) => {
  // The admin makes the phone's token and leaves a card waiting.
  await login(page, server);
  await newSession(page);
  await send(page, 'write phone.md: from the phone');
  await expect(pendingCards(page)).toHaveCount(1);
  const made = await request.post(`${server.url}/api/v1/tokens`, {
    headers: { authorization: `Bearer ${server.token}` },
    data: { name: 'phone', scope: 'approve' },
  });
  expect(made.status()).toBe(201);
  const secret = (await made.json()).token as string;

  const phone = await browser.newContext({ viewport: { width: 390, height: 844 } });
  const p = await phone.newPage();
  await p.goto(`${server.url}/login?token=${secret}`);
  await expect(p).toHaveURL(/\/inbox$/);
  await waitHydrated(p);
  for (const control of ['new-session', 'nav-answers', 'nav-config', 'nav-tokens', 'delete-session']) {
    await expect(p.getByTestId(control)).toHaveCount(0);
  }
  await expect(p.getByTestId('nav-inbox')).toBeVisible();
  // The config page, rendered for it, shows nothing of the configuration.
  await p.goto(`${server.url}/config`);
  await expect(p.locator('body')).not.toContainText('shell_timeout_secs');
  // `/` makes no session for it: it lands on the Inbox, and answers the card from there.
  await p.goto(`${server.url}/`);
  await expect(p).toHaveURL(/\/inbox$/);
  await waitHydrated(p);
  const inboxCard = p.locator('[data-testid=approval-card][data-state=pending]');
  await expect(inboxCard).toHaveCount(1);
  await inboxCard.locator('[data-action=approve]').click();
  await expect(pendingCards(page)).toHaveCount(0);
  // The session page, for it: the transcript and its cards, no composer, rename or mode.
  await p.goto(page.url());
  await waitLive(p);
  await expect(p.getByTestId('answer-only-note')).toBeVisible();
  for (const control of ['composer', 'send', 'rename-session', 'mode-picker', 'stop', 'new-session', 'delete-session']) {
    await expect(p.getByTestId(control)).toHaveCount(0);
  }
  await phone.close();
});
