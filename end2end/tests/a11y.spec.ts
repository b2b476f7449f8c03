// Accessibility: axe-core (WCAG 2 A and AA rules) finds no serious or critical violation on
// any page — a session with pending, resolved and sensitive cards, the Inbox, Rules, Audit,
// Your answers, Config and Tokens — in the light theme and the dark one.
import { expect, Page } from '@playwright/test';
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { chooseMode, newSession, pendingCards, send, test, toolResults, waitHydrated, waitLive } from './helpers';

// axe is injected as a script; the pages' CSP (rightly) allows no such script.
test.use({ bypassCSP: true });

const AXE = resolve(__dirname, '../node_modules/axe-core/axe.min.js');

interface Violation { id: string; impact: string; help: string; nodes: { target: string[]; failureSummary: string }[] }

async function violations(page: Page): Promise<Violation[]> {
  await page.addScriptTag({ path: AXE });
  const found: Violation[] = await page.evaluate(async () => {
    // @ts-ignore axe is the script just added
    const result = await axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } });
    return result.violations.map((v: any) => ({
      id: v.id, impact: v.impact, help: v.help,
      nodes: v.nodes.slice(0, 5).map((n: any) => ({ target: n.target, failureSummary: n.failureSummary })),
    }));
  });
  return found.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}

async function expectClean(page: Page, where: string) {
  const found = await violations(page);
  expect(found, `${where}: ${JSON.stringify(found, null, 2)}`).toEqual([]);
}

/** Keyboard focus is visible: the focused control draws an outline or a ring. */
async function expectFocusVisible(page: Page, target: ReturnType<Page['locator']>) {
  await target.focus();
  await page.keyboard.press('Shift+Tab');
  await page.keyboard.press('Tab');
  const ring = await target.evaluate((el) => {
    const style = getComputedStyle(el);
    return { outline: style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) > 0, shadow: style.boxShadow !== 'none' };
  });
  expect(ring.outline || ring.shadow, 'focus ring on the focused control').toBe(true);
}

for (const scheme of ['light', 'dark'] as const) {
  test(`every page passes axe in the ${scheme} theme`, async ({ page, server }) => {
    await page.emulateMedia({ colorScheme: scheme });
    await page.goto(`${server.url}/login?token=${server.token}`);
    await waitLive(page);
    // A session with one of each: a resolved card, a tool row, a sensitive pending card and
    // an ordinary one behind it (cards open one after another).
    await send(page, 'say: Tidying up first.\nrun: echo one');
    await pendingCards(page).locator('[data-action=approve]').click();
    await expect(toolResults(page, 'ok')).toHaveCount(1);
    await send(page, 'run: sudo rm -rf /tmp/a11y\nwrite a11y.md: hello');
    await expect(pendingCards(page)).toHaveCount(1);
    await expectClean(page, 'session page');
    // The sensitive card at its clearest: a write to an existing secrets file, with its masked
    // diff, in a session of its own (cards open one after another).
    const first = page.url();
    await newSession(page);
    writeFileSync(join(server.workspace, '.env'), 'OPENAI_API_KEY=sk-live-0123456789abcdef0123\nDEBUG=true\n');
    await send(page, 'write .env: OPENAI_API_KEY=sk-live-9876543210fedcba9876\\nDEBUG=false');
    await expect(pendingCards(page).getByTestId('card-floor-diff')).toHaveCount(1);
    await expectClean(page, 'floor card with its diff');
    await pendingCards(page).getByTestId('reveal-values').click();
    await expectClean(page, 'floor card, values revealed');
    await expectFocusVisible(page, pendingCards(page).getByTestId('reveal-values'));
    // A proposal with a table and code, in plan mode.
    await newSession(page);
    await chooseMode(page, 'plan');
    await send(page, 'propose plan: 1. read the data\\n\\n| step | tool |\\n|---|---|\\n| read | `cat` |\\n\\n```\\nls -la\\n```');
    await expect(pendingCards(page)).toHaveCount(1);
    await expectClean(page, 'plan proposal');
    await page.goto(first);
    await waitLive(page);
    // A rule, a token and audit entries, so each page has rows.
    await pendingCards(page).locator('[data-action=deny]').click();
    await pendingCards(page).locator('[data-action=submit-deny]').click();
    await expect(pendingCards(page)).toHaveCount(1);
    await pendingCards(page).locator('[data-action=allow_always]').click();
    await pendingCards(page).locator('[data-action=submit-always]').click();
    await send(page, 'run: ls -la');
    await expect(pendingCards(page)).toHaveCount(1);

    for (const path of ['/inbox', '/rules', '/audit', '/answers', '/config', '/tokens']) {
      await page.goto(`${server.url}${path}`);
      await waitHydrated(page);
      await expectClean(page, path);
    }
    // The two pages of their own (no bundle): ready once their script has run.
    for (const path of ['/notify', '/security']) {
      await page.goto(`${server.url}${path}`);
      await expect(page.locator('body[data-ready="true"]')).toHaveCount(1);
      await expectClean(page, path);
    }
  });
}
