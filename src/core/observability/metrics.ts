/**
 * A small Prometheus registry: counters, gauges and histograms with labels, rendered in the text
 * exposition format. Hot-path updates are a map lookup and an add; gauges that mirror fleet state
 * are filled by collectors at scrape time instead of on every request.
 */

type LabelValues = readonly string[];

const KEY_SEP = '\u0001';

function escapeLabel(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

function labelText(names: readonly string[], values: LabelValues, extra?: string): string {
  const parts: string[] = [];
  for (let i = 0; i < names.length; i++) parts.push(`${names[i]}="${escapeLabel(values[i] ?? '')}"`);
  if (extra) parts.push(extra);
  return parts.length === 0 ? '' : `{${parts.join(',')}}`;
}

function formatNumber(n: number): string {
  if (n === Number.POSITIVE_INFINITY) return '+Inf';
  if (n === Number.NEGATIVE_INFINITY) return '-Inf';
  return Number.isNaN(n) ? 'NaN' : String(n);
}

/** Label values → child, one map per label: a lookup joins no strings (hot-path updates allocate nothing). */
type Trie<Child> = Map<string, Trie<Child> | Child>;

abstract class Metric<Child> {
  protected readonly children = new Map<string, { values: LabelValues; child: Child }>();
  private readonly trie: Trie<Child> = new Map();

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
  ) {}

  protected abstract create(): Child;
  abstract readonly type: 'counter' | 'gauge' | 'histogram';
  protected abstract renderChild(values: LabelValues, child: Child, out: string[]): void;

  /** The series for these label values (created on first use). */
  labels(...values: string[]): Child {
    let node = this.trie;
    const last = values.length - 1;
    for (let i = 0; i < last; i++) {
      const value = values[i] as string;
      let next = node.get(value) as Trie<Child> | undefined;
      if (next === undefined) {
        next = new Map();
        node.set(value, next);
      }
      node = next;
    }
    const leaf = last < 0 ? '' : (values[last] as string);
    const found = node.get(leaf) as Child | undefined;
    if (found !== undefined) return found;
    const child = this.create();
    node.set(leaf, child);
    this.children.set(values.join(KEY_SEP), { values, child });
    return child;
  }

  /** Drops a series (a removed worker's gauges). */
  remove(...values: string[]): void {
    if (!this.children.delete(values.join(KEY_SEP))) return;
    let node: Trie<Child> | undefined = this.trie;
    for (let i = 0; i < values.length - 1 && node; i++) node = node.get(values[i] as string) as Trie<Child>;
    node?.delete(values.length === 0 ? '' : (values[values.length - 1] as string));
  }

  clear(): void {
    this.children.clear();
    this.trie.clear();
  }

  render(out: string[]): void {
    out.push(`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} ${this.type}`);
    for (const { values, child } of this.children.values()) this.renderChild(values, child, out);
  }
}

export class CounterChild {
  value = 0;
  inc(n = 1): void {
    this.value += n;
  }
}

export class Counter extends Metric<CounterChild> {
  readonly type = 'counter';
  protected create(): CounterChild {
    return new CounterChild();
  }
  inc(n = 1): void {
    this.labels().inc(n);
  }
  protected renderChild(values: LabelValues, child: CounterChild, out: string[]): void {
    out.push(`${this.name}${labelText(this.labelNames, values)} ${formatNumber(child.value)}`);
  }
}

export class GaugeChild {
  value = 0;
  set(v: number): void {
    this.value = v;
  }
  inc(n = 1): void {
    this.value += n;
  }
  dec(n = 1): void {
    this.value -= n;
  }
}

export class Gauge extends Metric<GaugeChild> {
  readonly type = 'gauge';
  protected create(): GaugeChild {
    return new GaugeChild();
  }
  set(v: number): void {
    this.labels().set(v);
  }
  protected renderChild(values: LabelValues, child: GaugeChild, out: string[]): void {
    out.push(`${this.name}${labelText(this.labelNames, values)} ${formatNumber(child.value)}`);
  }
}

export class HistogramChild {
  readonly counts: number[];
  sum = 0;
  count = 0;
  constructor(private readonly buckets: readonly number[]) {
    this.counts = new Array<number>(buckets.length).fill(0);
  }
  observe(v: number): void {
    this.sum += v;
    this.count++;
    const b = this.buckets;
    for (let i = 0; i < b.length; i++) {
      if (v <= (b[i] as number)) {
        (this.counts[i] as number)++;
        return;
      }
    }
  }
}

export class Histogram extends Metric<HistogramChild> {
  readonly type = 'histogram';
  constructor(
    name: string,
    help: string,
    labelNames: readonly string[],
    readonly buckets: readonly number[],
  ) {
    super(name, help, labelNames);
  }
  protected create(): HistogramChild {
    return new HistogramChild(this.buckets);
  }
  observe(v: number): void {
    this.labels().observe(v);
  }
  protected renderChild(values: LabelValues, child: HistogramChild, out: string[]): void {
    let cumulative = 0;
    for (let i = 0; i < this.buckets.length; i++) {
      cumulative += child.counts[i] as number;
      const le = `le="${formatNumber(this.buckets[i] as number)}"`;
      out.push(`${this.name}_bucket${labelText(this.labelNames, values, le)} ${cumulative}`);
    }
    out.push(`${this.name}_bucket${labelText(this.labelNames, values, 'le="+Inf"')} ${child.count}`);
    out.push(`${this.name}_sum${labelText(this.labelNames, values)} ${formatNumber(child.sum)}`);
    out.push(`${this.name}_count${labelText(this.labelNames, values)} ${child.count}`);
  }
}

/** The bucket layout vllm-router uses for every `*_duration_seconds` histogram. */
export const DURATION_BUCKETS: readonly number[] = [
  0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30, 45, 60, 90, 120, 180, 240,
];

export type Collector = () => void | Promise<void>;

export class MetricsRegistry {
  private readonly metrics = new Map<string, Metric<unknown>>();
  private readonly collectors: Collector[] = [];

  private register<M extends Metric<unknown>>(metric: M): M {
    const existing = this.metrics.get(metric.name);
    if (existing) {
      if (existing.type !== metric.type) throw new Error(`metric ${metric.name} registered twice`);
      return existing as M;
    }
    this.metrics.set(metric.name, metric);
    return metric;
  }

  counter(name: string, help: string, labelNames: readonly string[] = []): Counter {
    return this.register(new Counter(name, help, labelNames));
  }

  gauge(name: string, help: string, labelNames: readonly string[] = []): Gauge {
    return this.register(new Gauge(name, help, labelNames));
  }

  histogram(
    name: string,
    help: string,
    labelNames: readonly string[] = [],
    buckets: readonly number[] = DURATION_BUCKETS,
  ): Histogram {
    return this.register(new Histogram(name, help, labelNames, buckets));
  }

  /** Runs before every render: sets gauges that mirror state owned elsewhere. */
  addCollector(collector: Collector): void {
    this.collectors.push(collector);
  }

  async render(): Promise<string> {
    for (const collect of this.collectors) await collect();
    const out: string[] = [];
    for (const metric of this.metrics.values()) metric.render(out);
    return `${out.join('\n')}\n`;
  }
}

export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';
