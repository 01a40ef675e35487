/** Log lines to the Workers console: warnings and errors on console.error, the rest on console.log. */
import type { LogSink } from '../../core/observability/logger.ts';

export const consoleSink: LogSink = (line, level) =>
  level === 'warn' || level === 'error' ? console.error(line) : console.log(line);
