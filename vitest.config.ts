import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Integration and end-to-end tests start in-process emulators on ephemeral ports.
    testTimeout: 60_000,
    // Stack tests synthesize the whole app in beforeAll: give setup room on a slow machine.
    hookTimeout: 180_000,
    // Two cores here: keep parallelism modest so emulator-backed tests do not starve.
    maxWorkers: 2,
    // fauxqs persists through node:sqlite, behind this flag on Node 22.12 (harmless on 24).
    execArgv: ['--experimental-sqlite'],
  },
});
