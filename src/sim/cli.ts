// `npm run sim -- --port 8001 --ttft-ms 50 ...`: a simulated vLLM engine on its own.
import { parseSimCommandLine, simHelp } from './flags.ts';
import { startSimEngine } from './node.ts';

async function main(): Promise<number> {
  let cli: ReturnType<typeof parseSimCommandLine>;
  try {
    cli = parseSimCommandLine(process.argv.slice(2), process.env);
  } catch (err) {
    process.stderr.write(`sim: ${err instanceof Error ? err.message : String(err)}\n`);
    return 2;
  }
  if (cli.help) {
    process.stdout.write(`${simHelp()}\n`);
    return 0;
  }
  const running = await startSimEngine({
    ...cli.options,
    host: cli.host,
    port: cli.port,
    ...(cli.bootstrapPort === undefined ? {} : { bootstrapPort: cli.bootstrapPort }),
  });
  const c = running.engine.config;
  if (!cli.quiet) {
    const fail = c.failure.mode === 'none' ? 'none' : JSON.stringify(c.failure);
    process.stdout.write(
      `sim engine ${c.id} listening on ${running.url} (model ${c.models.join(', ')}, tokens ${c.tokens}, ` +
        `ttft ${c.ttftMs} ms, itl ${c.itlMs} ms, block ${c.blockMs} ms, fail ${fail})` +
        `${running.bootstrap ? `; bootstrap /query on ${running.bootstrap.url}` : ''}\n`,
    );
  }
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  await running.close();
  return 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`sim: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  },
);
