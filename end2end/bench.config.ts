// `npx playwright test --config bench.config.ts`: figures, not tests (nothing is asserted
// about speed). See BENCHMARKS.md, "Time to an actionable card".
import { defineConfig } from '@playwright/test';
import base from './playwright.config';

export default defineConfig({ ...base, testDir: './bench', timeout: 600_000 });
