/**
 * Preloaded into the router by bench/memory.ts when HEAP=1 (with --expose-gc): on SIGUSR2, a full
 * GC, then one `memprobe {json}` line on stderr with process.memoryUsage() (heapUsed after GC is
 * what the router really holds; RSS also has the garbage collector's headroom).
 */
process.on('SIGUSR2', () => {
  const rssBefore = process.memoryUsage.rss();
  (globalThis as { gc?: () => void }).gc?.();
  const m = process.memoryUsage();
  process.stderr.write(
    `memprobe ${JSON.stringify({ rssBefore, rss: m.rss, heapUsed: m.heapUsed, heapTotal: m.heapTotal, external: m.external, arrayBuffers: m.arrayBuffers })}\n`,
  );
});
