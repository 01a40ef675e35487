import { describe, expect, it } from 'vitest';
import { MetricsRegistry } from '../../src/core/observability/metrics.ts';

describe('MetricsRegistry', () => {
  it('renders counters, gauges and cumulative histograms in Prometheus text format', async () => {
    const reg = new MetricsRegistry();
    const c = reg.counter('t_requests_total', 'Requests', ['route']);
    c.labels('/a').inc();
    c.labels('/a').inc(2);
    c.labels('/b"x').inc();
    reg.gauge('t_active', 'Active').set(3);
    const h = reg.histogram('t_duration_seconds', 'Duration', ['route'], [0.1, 1]);
    h.labels('/a').observe(0.05);
    h.labels('/a').observe(0.5);
    h.labels('/a').observe(5);
    const text = await reg.render();
    expect(text).toContain('# TYPE t_requests_total counter');
    expect(text).toContain('t_requests_total{route="/a"} 3');
    expect(text).toContain('t_requests_total{route="/b\\"x"} 1');
    expect(text).toContain('t_active 3');
    expect(text).toContain('t_duration_seconds_bucket{route="/a",le="0.1"} 1');
    expect(text).toContain('t_duration_seconds_bucket{route="/a",le="1"} 2');
    expect(text).toContain('t_duration_seconds_bucket{route="/a",le="+Inf"} 3');
    expect(text).toContain('t_duration_seconds_count{route="/a"} 3');
    expect(text).toContain('t_duration_seconds_sum{route="/a"} 5.55');
  });

  it('runs collectors before rendering', async () => {
    const reg = new MetricsRegistry();
    const g = reg.gauge('t_load', 'Load', ['worker']);
    let n = 0;
    reg.addCollector(() => {
      g.labels('w').set(++n);
    });
    expect(await reg.render()).toContain('t_load{worker="w"} 1');
    expect(await reg.render()).toContain('t_load{worker="w"} 2');
  });

  it('finds a series by several label values without mixing them up; remove and clear drop series', async () => {
    const reg = new MetricsRegistry();
    const c = reg.counter('t_total', 'T', ['route', 'model', 'status']);
    c.labels('/a', 'm', '200').inc();
    c.labels('/a', 'm', '200').inc();
    c.labels('/a', 'm2', '200').inc(5);
    expect(c.labels('/a', 'm', '200')).toBe(c.labels('/a', 'm', '200'));
    let text = await reg.render();
    expect(text).toContain('t_total{route="/a",model="m",status="200"} 2');
    expect(text).toContain('t_total{route="/a",model="m2",status="200"} 5');
    c.remove('/a', 'm', '200');
    text = await reg.render();
    expect(text).not.toContain('model="m",');
    c.labels('/a', 'm', '200').inc();
    expect(await reg.render()).toContain('t_total{route="/a",model="m",status="200"} 1');
    c.clear();
    expect(await reg.render()).not.toContain('t_total{');
    c.labels('/a', 'm2', '200').inc();
    expect(await reg.render()).toContain('t_total{route="/a",model="m2",status="200"} 1');
  });
});
