import { describe, expect, it } from 'vitest';
import type { Upstream } from '../../../src/core/contracts/upstream.ts';
import {
  bootstrapAddress,
  MooncakeBootstrap,
  parseQueryAnswer,
} from '../../../src/core/fleet/mooncake-bootstrap.ts';
import { FakeClock } from '../../support/fake-clock.ts';

const encode = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));

/** A bootstrap server answering `statuses` in turn (the last one repeats). */
function server(
  statuses: number[],
  answer: unknown = { '0': { engine_id: 'e0' }, '1': { engine_id: 'e1' } },
) {
  const urls: string[] = [];
  const upstream: Upstream = async (req) => {
    urls.push(req.url);
    const status = statuses[Math.min(urls.length - 1, statuses.length - 1)] as number;
    return { status, headers: {}, body: status === 200 ? encode(answer) : encode({ error: 'x' }) };
  };
  return { upstream, urls };
}

describe('Mooncake bootstrap lookup', () => {
  it('bootstrap address: the prefill host with its port, 8998 by default', () => {
    expect(bootstrapAddress({ url: 'http://10.0.0.5:8100', bootstrapPort: 9001 })).toBe(
      'http://10.0.0.5:9001',
    );
    expect(bootstrapAddress({ url: 'http://10.0.0.5:8100', bootstrapPort: null })).toBe(
      'http://10.0.0.5:8998',
    );
    expect(bootstrapAddress({ url: 'http://[::1]:8100' })).toBe('http://[::1]:8998');
  });

  it('reads engine ids by DP rank; ignores entries without one', () => {
    expect(
      parseQueryAnswer({ '0': { engine_id: 'a' }, '1': { engine_id: '' }, x: { engine_id: 'b' } }),
    ).toEqual(new Map([[0, 'a']]));
    expect(parseQueryAnswer([])).toBeUndefined();
    expect(parseQueryAnswer({ '0': {} })).toBeUndefined();
  });

  it('queries each server once, then answers from memory by DP rank', async () => {
    const s = server([200]);
    const b = new MooncakeBootstrap({ upstream: s.upstream, clock: new FakeClock() });
    const targets = [
      { url: 'http://p:8100', role: 'prefill', bootstrapPort: 9000, dpRank: 0 },
      { url: 'http://p:8100', role: 'prefill', bootstrapPort: 9000, dpRank: 1 },
      { url: 'http://d:8200', role: 'decode' },
    ];
    await b.refresh(targets);
    await b.refresh(targets);
    expect(s.urls).toEqual(['http://p:9000/query']);
    expect(b.engineId(targets[1] as (typeof targets)[0])).toBe('e1');
    expect(b.allKnown(targets)).toBe(true);
  });

  it('backs off after failures (no query before the backoff passed), then recovers', async () => {
    const clock = new FakeClock();
    const s = server([503, 503, 200]);
    const events: string[] = [];
    const b = new MooncakeBootstrap({
      upstream: s.upstream,
      clock,
      initialBackoffMs: 500,
      onEvent: (level, message) => events.push(`${level} ${message}`),
    });
    const target = { url: 'http://p:8100', role: 'prefill', bootstrapPort: 9000 };
    await b.refresh([target]);
    await b.refresh([target]); // within the backoff: no query
    expect(s.urls).toHaveLength(1);
    clock.advance(500);
    await b.refresh([target]);
    expect(s.urls).toHaveLength(2);
    clock.advance(999); // the second backoff is 1000 ms
    await b.refresh([target]);
    expect(s.urls).toHaveLength(2);
    clock.advance(1);
    await b.refresh([target]);
    expect(b.engineId(target)).toBe('e0');
    // One warning per state change, not per failed query.
    expect(events).toEqual([
      'warn mooncake bootstrap query failed',
      'info mooncake bootstrap server answered',
    ]);
  });

  it('a request asks at once, whatever the backoff, and concurrent asks share one query', async () => {
    const s = server([503, 200]);
    const b = new MooncakeBootstrap({ upstream: s.upstream, clock: new FakeClock() });
    const target = { url: 'http://p:8100', bootstrapPort: 9000 };
    expect(await b.resolve(target)).toBeUndefined();
    const [x, y] = await Promise.all([b.resolve(target), b.resolve(target)]);
    expect([x, y]).toEqual(['e0', 'e0']);
    expect(s.urls).toHaveLength(2);
  });
});
