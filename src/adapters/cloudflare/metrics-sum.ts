/**
 * Prometheus text summed across sources: the request metrics isolates ship to the fleet's objects,
 * and, at scrape time, the pool objects' pages added to the main object's. Every value the core
 * renders is additive (counters, histogram buckets, sums and counts; load gauges of disjoint
 * requests), except the gauges that describe a worker's state, which only the main object renders.
 */
import type { MetricsDelta } from './rpc.ts';

/** Gauges of a worker's state: the main object's word, never summed over pools. */
const STATE_FAMILIES = new Set([
  'vllm_router_worker_health',
  'vllm_router_active_workers',
  'vllm_router_cb_state',
]);

/** One family from its rendered lines: its `# HELP`/`# TYPE` lines and `[series, value]` pairs. */
export function familyFrom(name: string, lines: readonly string[]): MetricsDelta[number] {
  const head: string[] = [];
  const series: [string, number][] = [];
  for (const line of lines) {
    if (line.startsWith('#')) head.push(line);
    else if (line !== '') {
      const space = line.lastIndexOf(' ');
      series.push([line.slice(0, space), Number(line.slice(space + 1))]);
    }
  }
  return { name, head, series };
}

/** A Prometheus text page as families (a family's lines are contiguous, its head first). */
export function parseMetricsText(text: string): MetricsDelta {
  const families: MetricsDelta = [];
  let name: string | undefined;
  let lines: string[] = [];
  const close = () => {
    if (name !== undefined) families.push(familyFrom(name, lines));
  };
  for (const line of text.split('\n')) {
    const named = line.startsWith('# ') ? line.split(' ', 3)[2] : undefined;
    if (named !== undefined && named !== name) {
      close();
      name = named;
      lines = [];
    }
    lines.push(line);
  }
  close();
  return families;
}

/** Sums the request metrics isolates ship and renders them (each object keeps one). */
export class MetricsAggregate {
  private readonly families = new Map<string, { head: string[]; series: Map<string, number> }>();

  add(delta: MetricsDelta): void {
    for (const { name, head, series } of delta) {
      let family = this.families.get(name);
      if (!family) {
        family = { head, series: new Map() };
        this.families.set(name, family);
      }
      for (const [key, value] of series) family.series.set(key, (family.series.get(key) ?? 0) + value);
    }
  }

  render(): string {
    const out: string[] = [];
    for (const { head, series } of this.families.values()) {
      out.push(...head);
      for (const [key, value] of series) out.push(`${key} ${value}`);
    }
    return out.length === 0 ? '' : `${out.join('\n')}\n`;
  }
}

/** The main object's page with the pool objects' pages added (their worker state gauges left out). */
export function sumMetricsTexts(main: string, pools: readonly string[]): string {
  if (pools.length === 0) return main;
  const sum = new MetricsAggregate();
  sum.add(parseMetricsText(main));
  for (const text of pools) sum.add(parseMetricsText(text).filter((f) => !STATE_FAMILIES.has(f.name)));
  return sum.render();
}
