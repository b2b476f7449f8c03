// Playwright runs against Debian's Chromium (no browser download), one worker: the machine
// has two cores and every test starts its own real server.
import { defineConfig } from '@playwright/test';

export default defineConfig({
  testDir: './tests',
  // Hang guards, not speed goals: a debug bundle on two shared cores can be slow to hydrate.
  timeout: 120_000,
  expect: { timeout: 30_000 },
  workers: 1,
  retries: 0,
  reporter: [['list']],
  use: {
    browserName: 'chromium',
    launchOptions: {
      executablePath: process.env.CHROMIUM_PATH || '/usr/bin/chromium',
      args: [
        '--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
        '--disable-background-networking', '--disable-component-update', '--disable-sync',
      ],
    },
    trace: 'off',
  },
});
