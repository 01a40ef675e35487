/**
 * The Dockerfile as data, for the tests of what the image does (Docker itself cannot run here):
 * its stages and instructions, the environment of the runtime stage, and the command line
 * `docker run IMAGE ...args` executes.
 */
import { readFileSync } from 'node:fs';

const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');

export interface DockerInstruction {
  op: string;
  args: string;
}

/** Instructions per stage (a FROM starts one), line continuations joined, comments dropped. */
export function parseDockerfile(text: string): DockerInstruction[][] {
  const lines = text.replace(/\\\n/g, ' ').split('\n');
  const stages: DockerInstruction[][] = [];
  for (const line of lines.map((l) => l.trim())) {
    if (line === '' || line.startsWith('#')) continue;
    const [, op = '', args = ''] = /^(\S+)\s*(.*)$/.exec(line) ?? [];
    const instruction = { op: op.toUpperCase(), args: args.replace(/\s+/g, ' ') };
    if (instruction.op === 'FROM') stages.push([]);
    stages.at(-1)?.push(instruction);
  }
  return stages;
}

/** The exec-form array of an ENTRYPOINT/CMD (Docker runs the shell form under /bin/sh -c). */
function execForm(args: string): string[] {
  return JSON.parse(args) as string[];
}

/** `ENV A=1 B=2` (and the legacy `ENV A 1`) as a record. */
function envOf(stage: DockerInstruction[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const { args } of stage.filter((i) => i.op === 'ENV')) {
    if (!args.includes('=')) {
      const [key = '', ...value] = args.split(' ');
      env[key] = value.join(' ');
      continue;
    }
    for (const pair of args.split(' ')) {
      const [key = '', value = ''] = pair.split('=');
      env[key] = value.replace(/^"|"$/g, '');
    }
  }
  return env;
}

/** What `docker run IMAGE ...args` executes: ENTRYPOINT plus the arguments, or plus CMD without any. */
export function dockerRunArgv(stage: DockerInstruction[], runArgs: string[]): string[] {
  const last = (op: string) => stage.filter((i) => i.op === op).at(-1);
  const entrypoint = last('ENTRYPOINT');
  const cmd = last('CMD');
  return [
    ...(entrypoint ? execForm(entrypoint.args) : []),
    ...(runArgs.length > 0 ? runArgs : cmd ? execForm(cmd.args) : []),
  ];
}

export function dockerfileRuntime(): DockerInstruction[] {
  return parseDockerfile(read('Dockerfile')).at(-1) ?? [];
}

export function dockerfileEnv(): Record<string, string> {
  return envOf(dockerfileRuntime());
}
