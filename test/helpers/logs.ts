import { Writable } from 'node:stream';
import pino, { type Logger } from 'pino';

export interface CapturedLogs {
  readonly log: Logger;
  readonly lines: Record<string, unknown>[];
  messages(level?: string): string[];
}

const LEVELS: Record<number, string> = {
  10: 'trace',
  20: 'debug',
  30: 'info',
  40: 'warn',
  50: 'error',
  60: 'fatal',
};

/** A real pino logger whose JSON lines are kept for assertions. */
export function captureLogs(level = 'debug'): CapturedLogs {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      for (const l of chunk.toString().split('\n')) if (l.trim()) lines.push(JSON.parse(l));
      cb();
    },
  });
  const log = pino({ level }, stream);
  return {
    log,
    lines,
    messages: (lvl) =>
      lines.filter((l) => !lvl || LEVELS[l.level as number] === lvl).map((l) => String(l.msg)),
  };
}
