import { describe, expect, it } from 'vitest';
import { v8Tuning } from '../../../src/adapters/node/v8-tuning.ts';

describe('the V8 settings the Node router applies to itself', () => {
  it('turns allocation-site pretenuring off by default', () => {
    expect(v8Tuning([], undefined)).toEqual(['--no-allocation-site-pretenuring']);
    expect(v8Tuning(['--max-old-space-size=512'], '--enable-source-maps')).toEqual([
      '--no-allocation-site-pretenuring',
    ]);
  });

  it("leaves the setting as given on node's command line or in NODE_OPTIONS", () => {
    expect(v8Tuning(['--allocation-site-pretenuring'], undefined)).toEqual([]);
    expect(v8Tuning(['--no-allocation-site-pretenuring'], undefined)).toEqual([]);
    expect(v8Tuning([], '--enable-source-maps --allocation_site_pretenuring')).toEqual([]);
    expect(v8Tuning([], '  --no_allocation_site_pretenuring  ')).toEqual([]);
  });

  it('does not mistake a similar flag for it', () => {
    expect(v8Tuning(['--trace-pretenuring'], '--allocation-site-pretenuring-x')).toEqual([
      '--no-allocation-site-pretenuring',
    ]);
  });
});
