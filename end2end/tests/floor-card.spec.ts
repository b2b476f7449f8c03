// The sensitive card is the clearest card (issue 39.1): a safety-floor card opens with one
// plain sentence (what, to what, why it is sensitive, the rule), shows what will be written
// (or the command, whole) with secret-looking values masked until a deliberate reveal, and
// its Approve is outlined, says what it approves and is not where focus lands; the two-key
// rule stays. At desktop and phone size, light and dark, and with JavaScript off.
import { expect, Page } from '@playwright/test';
import { card, keysReady, login, pendingCards, pressKey, send, test, toolResults, waitHydrated } from './helpers';
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const AXE = resolve(__dirname, '../node_modules/axe-core/axe.min.js');

/** axe-core's WCAG 2 A/AA rules over the floor cards: their serious or critical violations. */
async function cardViolations(page: Page) {
  await page.addScriptTag({ path: AXE });
  const found: { id: string; impact: string; nodes: unknown[] }[] = await page.evaluate(async () => {
    // @ts-ignore axe is the script just added
    const result = await axe.run('.card.floor', { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } });
    return result.violations.map((v: any) => ({ id: v.id, impact: v.impact, nodes: v.nodes.slice(0, 3).map((n: any) => n.target) }));
  });
  return found.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}

const SECRET = 'sk-live-0123456789abcdef';
const MASKED = 'OPENAI_API_KEY=sk-l…def';
const WRITE = `write .env: OPENAI_API_KEY=${SECRET}\\nDEBUG=true`;
const SENTENCE = 'Writes `.env` — a secrets file: always asks, even in Yolo.';

async function openFloorCard(page: Page, text: string) {
  const before = await pendingCards(page).count();
  await send(page, text);
  await expect(pendingCards(page)).toHaveCount(before + 1);
  const id = (await pendingCards(page).last().getAttribute('data-approval-id'))!;
  const c = card(page, id);
  await expect(c).toHaveClass(/\bfloor\b/);
  return c;
}

const sizes = [
  { name: 'desktop', use: { viewport: { width: 1280, height: 800 } } },
  { name: 'phone', use: { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true } },
];

for (const size of sizes) {
  for (const colorScheme of ['light', 'dark'] as const) {
    test.describe(`${size.name}, ${colorScheme}`, () => {
      // axe is injected as a script, which the page's CSP (rightly) refuses.
      test.use({ ...size.use, colorScheme, bypassCSP: true });

      test('a floor write: the sentence, the value masked, a reveal, an Approve that says what it approves', async ({ page, server }) => {
        await login(page, server);
        const c = await openFloorCard(page, WRITE);
        await expect(c.getByTestId('card-summary')).toHaveText(SENTENCE);
        // Which pattern matched is a detail below it, not in the sentence.
        await expect(c.getByTestId('card-floor-match')).toContainText('**/.env*');
        const written = c.getByTestId('card-floor-text');
        await expect(written).toHaveText(`${MASKED}\nDEBUG=true`);
        await expect(c).not.toContainText(SECRET, { useInnerText: true });
        await expect(c.getByTestId('card-args')).toContainText(MASKED);
        // No .env yet: the person's view of the file says so.
        await expect(c.getByTestId('card-floor-note')).toHaveText('A new file.');

        // A deliberate reveal, per card, and back.
        const reveal = c.getByTestId('reveal-values');
        await expect(reveal).toHaveAttribute('aria-pressed', 'false');
        await expect(reveal).toHaveText('Reveal values');
        await reveal.click();
        await expect(reveal).toHaveAttribute('aria-pressed', 'true');
        await expect(written).toHaveText(`OPENAI_API_KEY=${SECRET}\nDEBUG=true`);
        expect(await cardViolations(page), 'axe, revealed').toEqual([]);
        await reveal.click();
        await expect(reveal).toHaveAttribute('aria-pressed', 'false');
        await expect(written).toHaveText(`${MASKED}\nDEBUG=true`);
        expect(await cardViolations(page), 'axe, masked').toEqual([]);

        // Approve names what it approves and is not styled as the default action.
        const approve = c.locator('[data-action=approve]');
        await expect(approve).toContainText('Approve writing .env');
        await expect(approve).not.toHaveClass(/\bprimary\b/);
        await expect(c.locator('[data-action=deny]')).not.toHaveClass(/\b(primary|danger)\b/);
        const looks = await approve.evaluate((el) => getComputedStyle(el).backgroundColor);
        expect(looks, 'outlined, not filled').toBe('rgba(0, 0, 0, 0)');
        // Focus lands on the card, never on its Approve.
        await keysReady(page);
        expect(await approve.evaluate((el) => el === document.activeElement)).toBe(false);

        // The two-key rule stays: one `a` only asks; the second approves what was written.
        await pressKey(page, 'a');
        await expect(c.getByTestId('card-confirm')).toContainText('press a again');
        await expect(c).toHaveAttribute('data-state', 'pending');
        await pressKey(page, 'a');
        await expect(c).toHaveAttribute('data-decision', 'approve');
        await expect(toolResults(page, 'ok')).toHaveCount(1);
        expect(readFileSync(join(server.workspace, '.env'), 'utf8')).toBe(`OPENAI_API_KEY=${SECRET}\nDEBUG=true`);
      });
    });
  }
}

test('a floor write over an existing .env: what changes, the old key masked even when revealed', async ({ browser, page, server }) => {
  const OLD = 'sk-live-OLDOLD9876543210xyz';
  writeFileSync(join(server.workspace, '.env'), `OPENAI_API_KEY=${OLD}\nDEBUG=true\n`);
  await login(page, server);
  const c = await openFloorCard(page, `write .env: OPENAI_API_KEY=${SECRET}\\nDEBUG=false`);
  const changes = c.getByTestId('card-floor-diff');
  await expect(changes).toContainText('What changes in .env:');
  await expect(changes).toContainText('-DEBUG=true');
  await expect(changes).toContainText('+DEBUG=false');
  await expect(changes).toContainText('-OPENAI_API_KEY=sk-l…xyz');
  await expect(changes).toContainText(`+${MASKED}`);
  await expect(c.getByTestId('card-floor-note')).toHaveCount(0);
  await expect(c).not.toContainText(OLD, { useInnerText: true });

  // The reveal shows the agent's own values; what the file holds stays masked.
  await c.getByTestId('reveal-values').click();
  await expect(c.getByTestId('card-floor-text')).toHaveText(`OPENAI_API_KEY=${SECRET}\nDEBUG=false`);
  await expect(changes).toContainText('-OPENAI_API_KEY=sk-l…xyz');
  await expect(c).not.toContainText(OLD, { useInnerText: true });
  expect(await page.content()).not.toContain(OLD);

  // A phone's `approve` token answers cards but is not the person at the console: its card
  // keeps the note, and nothing of the file reaches its page.
  const made = await page.request.post(`${server.url}/api/v1/tokens`, {
    headers: { Authorization: `Bearer ${server.token}` },
    data: { name: 'phone', scope: 'approve' },
  });
  expect(made.status(), await made.text()).toBe(201);
  const phoneContext = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
  try {
    const phone = await phoneContext.newPage();
    await phone.goto(`${server.url}/login?token=${(await made.json()).token}`);
    await expect(phone).toHaveURL(`${server.url}/inbox`);
    await waitHydrated(phone);
    const onPhone = card(phone, (await c.getAttribute('data-approval-id'))!);
    await expect(onPhone.getByTestId('card-floor-note')).toContainText('is not shown: it is on the safety floor');
    await phone.waitForTimeout(500);
    await expect(onPhone.getByTestId('card-floor-diff')).toHaveCount(0);
    expect(await phone.content()).not.toContain('OLDOLD');
  } finally {
    await phoneContext.close();
  }

  await c.locator('[data-action=deny]').click();
  await c.getByTestId('deny-reason').fill('not now');
  await c.locator('[data-action=submit-deny]').click();
  await expect(c).toHaveAttribute('data-decision', 'deny');
  expect(readFileSync(join(server.workspace, '.env'), 'utf8')).toBe(`OPENAI_API_KEY=${OLD}\nDEBUG=true\n`);
});

test('a floor command: its sentence, the command whole, Approve running this command', async ({ page, server }) => {
  await login(page, server);
  const command = 'cat .env && echo "token: Bearer abcdef123456" > /dev/null';
  const c = await openFloorCard(page, `run: ${command}`);
  await expect(c.getByTestId('card-summary')).toHaveText(
    'Runs a command that touches `.env` — a secrets file: always asks, even in Yolo.',
  );
  // A command is shown whole, never masked: a masked stretch could hide what it does.
  await expect(c.getByTestId('card-floor-text')).toHaveText(command);
  await expect(c.getByTestId('reveal-values')).toHaveCount(0);
  const approve = c.locator('[data-action=approve]');
  await expect(approve).toContainText('Approve running this command');
  await approve.click();
  await expect(c).toHaveAttribute('data-decision', 'approve');
});

test('with JavaScript off, a floor card says the same, masked, and reveals in a details', async ({ browser, page, server }) => {
  await login(page, server);
  const sessionUrl = page.url();
  const c = await openFloorCard(page, WRITE);
  const id = (await c.getAttribute('data-approval-id'))!;

  const phone = await browser.newContext({ javaScriptEnabled: false, viewport: { width: 390, height: 844 } });
  const p = await phone.newPage();
  await p.goto(`${server.url}/login?token=${server.token}`);
  await p.goto(sessionUrl);
  const form = card(p, id);
  await expect(form.getByTestId('card-summary')).toHaveText(SENTENCE);
  await expect(form.getByTestId('card-floor-text').first()).toHaveText(`${MASKED}\nDEBUG=true`);
  await expect(form.getByTestId('reveal-values')).toBeHidden();
  // The server's render never carries what the file holds: without a script, the note stays.
  await expect(form.getByTestId('card-floor-note')).toContainText('is not shown: it is on the safety floor');
  const details = form.locator('.card-reveal-form');
  await expect(details).toBeVisible();
  await details.locator('summary').click();
  await expect(details).toContainText(`OPENAI_API_KEY=${SECRET}`);
  const approve = form.locator('[data-action=approve]');
  await expect(approve).toContainText('Approve writing .env');
  await approve.click();
  await expect(card(p, id)).toHaveAttribute('data-state', 'resolved');
  await expect(card(page, id)).toHaveAttribute('data-decision', 'approve');
  await phone.close();
});
