/**
 * Finds the module specifiers a TypeScript file imports, without a parser and without dependencies.
 *
 * The source is first "masked": comments, regular-expression literals and the text of string and
 * template literals are blanked (line breaks kept, so offsets still give line numbers), while the
 * value of every string literal is remembered by its offset. The import patterns then run on code
 * that can no longer contain a commented-out import or the word `import` inside a string.
 */

export interface ImportRef {
  /** The specifier as written, e.g. `../contracts/errors.ts`, `hono`, `node:fs`. */
  specifier: string;
  /** 1-based line of the `import`/`export` keyword. */
  line: number;
  kind: 'static' | 're-export' | 'side-effect' | 'dynamic';
  /** `import type …` / `export type … from` (still an edge for cycles and layers). */
  typeOnly: boolean;
}

interface Masked {
  code: string;
  /** Offset of the opening quote → the literal's raw text (templates only when they have no `${`). */
  strings: Map<number, string>;
}

const REGEX_AFTER_CHAR = new Set('(,=:[!&|?{};+-*%<>~^'.split(''));
const REGEX_AFTER_WORD = new Set([
  'return',
  'typeof',
  'case',
  'do',
  'else',
  'in',
  'of',
  'new',
  'delete',
  'void',
  'throw',
  'instanceof',
  'yield',
  'await',
]);

const blank = (s: string): string => s.replace(/[^\n]/g, ' ');
const fill = (s: string): string => s.replace(/[^\n]/g, '_');

/** True when a `/` at this point starts a regular expression rather than a division. */
function slashStartsRegex(out: string): boolean {
  const before = out.trimEnd();
  if (before === '') return true;
  const last = before[before.length - 1] as string;
  if (REGEX_AFTER_CHAR.has(last)) return true;
  const word = /[\w$]+$/.exec(before)?.[0];
  return word !== undefined && REGEX_AFTER_WORD.has(word);
}

/** Index just past the end of a quoted string starting at `start` (stops at a line break). */
function endOfString(text: string, start: number): number {
  const quote = text[start];
  let i = start + 1;
  while (i < text.length && text[i] !== quote && text[i] !== '\n') i += text[i] === '\\' ? 2 : 1;
  return Math.min(i + 1, text.length);
}

/** Index just past the end of a regular-expression literal starting at `start` (flags included). */
function endOfRegex(text: string, start: number): number {
  let i = start + 1;
  let inClass = false;
  while (i < text.length && text[i] !== '\n') {
    const ch = text[i];
    if (ch === '\\') i++;
    else if (ch === '[') inClass = true;
    else if (ch === ']') inClass = false;
    else if (ch === '/' && !inClass) break;
    i++;
  }
  i++;
  while (i < text.length && /[a-z]/i.test(text[i] as string)) i++;
  return Math.min(i, text.length);
}

/** Blanks comments, regex literals and literal text; see the file comment. */
export function maskSource(text: string): Masked {
  const strings = new Map<number, string>();
  let out = '';
  /** One entry per open `${`: the brace depth at which that substitution closes. */
  const templates: number[] = [];
  let depth = 0;
  let i = 0;
  const templateText = (start: number): void => {
    // Scans template text from `start` (just after a backtick or a closing `}`).
    let j = start;
    while (j < text.length && text[j] !== '`' && !(text[j] === '$' && text[j + 1] === '{'))
      j += text[j] === '\\' ? 2 : 1;
    out += fill(text.slice(start, j));
    if (text[j] === '`') {
      out += '`';
      i = j + 1;
    } else {
      out += '${';
      templates.push(depth);
      depth++;
      i = j + 2;
    }
  };
  while (i < text.length) {
    const ch = text[i] as string;
    const next = text[i + 1];
    if (ch === '/' && next === '/') {
      const end = text.indexOf('\n', i);
      const stop = end === -1 ? text.length : end;
      out += blank(text.slice(i, stop));
      i = stop;
    } else if (ch === '/' && next === '*') {
      const end = text.indexOf('*/', i + 2);
      const stop = end === -1 ? text.length : end + 2;
      out += blank(text.slice(i, stop));
      i = stop;
    } else if (ch === '/' && slashStartsRegex(out)) {
      const stop = endOfRegex(text, i);
      out += `/${fill(text.slice(i + 1, stop - 1))}/`.slice(0, stop - i);
      i = stop;
    } else if (ch === "'" || ch === '"') {
      const stop = endOfString(text, i);
      strings.set(out.length, text.slice(i + 1, stop - 1));
      out += ch + fill(text.slice(i + 1, stop - 1)) + (stop - i > 1 ? text[stop - 1] : '');
      i = stop;
    } else if (ch === '`') {
      const at = out.length;
      out += '`';
      const before = templates.length;
      templateText(i + 1);
      if (templates.length === before) strings.set(at, text.slice(at + 1, i - 1));
    } else if (ch === '}' && templates.length > 0 && templates[templates.length - 1] === depth - 1) {
      templates.pop();
      depth--;
      out += '}';
      templateText(i + 1);
    } else {
      if (ch === '{') depth++;
      else if (ch === '}') depth--;
      out += ch;
      i++;
    }
  }
  return { code: out, strings };
}

const NOT_AFTER = '(?<![\\w$.])';
/** `import … from '…'` / `export … from '…'`: the clause holds only names, braces, `*`, `,`, `as`, `type`. */
const FROM = new RegExp(`${NOT_AFTER}(import|export)\\b([\\w$\\s{},*]*?)\\bfrom\\s*(?=['"])`, 'g');
const SIDE_EFFECT = new RegExp(`${NOT_AFTER}import\\s*(?=['"])`, 'g');
/** `import('…')`, `await import("…")`, `typeof import('…')`. */
const DYNAMIC = new RegExp(`${NOT_AFTER}import\\s*\\(\\s*(?=['"\`])`, 'g');

function lineAt(code: string, offset: number): number {
  let line = 1;
  for (let i = 0; i < offset; i++) if (code.charCodeAt(i) === 10) line++;
  return line;
}

/** Every import of `text`, in source order: static, re-exports, side-effect and dynamic. */
export function scanImports(text: string): ImportRef[] {
  const { code, strings } = maskSource(text);
  const refs: ImportRef[] = [];
  const add = (m: RegExpExecArray, kind: ImportRef['kind'], typeOnly: boolean) => {
    const specifier = strings.get(m.index + m[0].length);
    if (specifier !== undefined) refs.push({ specifier, line: lineAt(code, m.index), kind, typeOnly });
  };
  for (const m of code.matchAll(FROM)) {
    const typeOnly = /^\s+type\s/.test(m[2] ?? '');
    add(m, m[1] === 'export' ? 're-export' : 'static', typeOnly);
  }
  for (const m of code.matchAll(SIDE_EFFECT)) add(m, 'side-effect', false);
  for (const m of code.matchAll(DYNAMIC)) add(m, 'dynamic', /\btypeof\s*$/.test(code.slice(0, m.index)));
  return refs.sort((a, b) => a.line - b.line);
}
