// `npx playwright test --config tour.config.ts` (or `scripts/tour`): draws the README's Tour
// screenshots into docs/tour/ from a real server and the real bundle. Pictures, not tests.
import { defineConfig } from '@playwright/test';
import base from './playwright.config';

export default defineConfig({ ...base, testDir: './tour', timeout: 300_000 });
