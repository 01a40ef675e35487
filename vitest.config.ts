import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: [
      'test/unit/**/*.test.ts',
      'test/integration/**/*.test.ts',
      'test/contract/**/*.test.ts',
      'test/runtime/{node,deno}/**/*.test.ts',
      'test/app/**/*.test.ts',
      'test/browser/**/*.test.ts',
    ],
    testTimeout: 20_000,
    hookTimeout: 20_000,
  },
});
