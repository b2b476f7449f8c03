// The README's Tour, drawn from the app as it is: each scene is one screenshot in docs/tour/.
// Run `scripts/tour` after a change to a page the Tour shows.
import { Page } from '@playwright/test';
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { newSession, pendingCards, send, test, toolResults, waitHydrated, waitLive } from '../tests/helpers';

const OUT = resolve(__dirname, '../../docs/tour');

async function shoot(page: Page, name: string) {
  await page.waitForTimeout(300); // let transitions settle
  await page.screenshot({ path: join(OUT, `${name}.png`) });
}

test('the tour', async ({ page, server }) => {
  writeFileSync(join(server.workspace, 'notes.md'), 'Meeting notes\n- ship the tour\n');
  writeFileSync(join(server.workspace, '.env'), 'OPENAI_API_KEY=sk-live-0123456789abcdef0123\nDEBUG=true\n');
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.goto(`${server.url}/login?token=${server.token}`);
  await waitLive(page);

  // 1. An ordinary card: what the agent says, why, the diff, the countdown.
  await send(page, 'say: Adding the tour to the notes.\nwrite notes.md: Meeting notes\\n- ship the tour\\n- take screenshots');
  await pendingCards(page).first().waitFor();
  await shoot(page, '1-card');
  await pendingCards(page).locator('[data-action=approve]').click();
  await toolResults(page, 'ok').first().waitFor();

  // 2. The sensitive card: one sentence, the secret masked.
  await send(page, 'write .env: OPENAI_API_KEY=sk-live-9876543210fedcba9876\\nDEBUG=false');
  await pendingCards(page).first().waitFor();
  await shoot(page, '2-sensitive-card');

  // 3. Many cards at once: the Inbox as a list (a batch from a second session, and the
  //    sensitive card left for you).
  await newSession(page);
  await send(page, 'parallel:\nrun: ls -la\nwrite todo.md: buy milk\nrun: git status');
  await pendingCards(page).first().waitFor();
  await page.goto(`${server.url}/inbox`);
  await waitHydrated(page);
  await shoot(page, '3-inbox');

  // 4. The other pages, in the same shell.
  for (const [name, path] of [['4-rules', '/rules'], ['5-audit', '/audit'], ['6-config', '/config'], ['7-tokens', '/tokens']]) {
    await page.goto(`${server.url}${path}`);
    await waitHydrated(page);
    await shoot(page, name);
  }
  await page.goto(`${server.url}/security`);
  await page.locator('body[data-ready="true"]').waitFor();
  await shoot(page, '8-security');

  // 9. On a phone, in the dark.
  await page.emulateMedia({ colorScheme: 'dark' });
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(`${server.url}/inbox`);
  await waitHydrated(page);
  await shoot(page, '9-phone-dark');
});
