import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Child-process and loopback tests are I/O bound; two cores run four files fine.
    maxWorkers: 4,
  },
});
