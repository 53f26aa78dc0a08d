import type { Logger } from './log.ts';

/**
 * One log line when a failure starts, a summary at most once per interval while it repeats,
 * and one line on recovery: a VM that cannot reach IMDS must not log once per second.
 */
export class FailureLog {
  private current: {
    signature: string;
    since: number;
    count: number;
    lastReportAt: number;
    suppressed: number;
  } | null = null;
  private readonly log: Logger;
  private readonly what: string;
  private readonly summaryIntervalMs: number;

  constructor(log: Logger, what: string, summaryIntervalMs = 60_000) {
    this.log = log;
    this.what = what;
    this.summaryIntervalMs = summaryIntervalMs;
  }

  failure(now: number, signature: string, message: string, extra: Record<string, unknown> = {}): void {
    const c = this.current;
    if (!c || c.signature !== signature) {
      this.current = { signature, since: now, count: 1, lastReportAt: now, suppressed: 0 };
      this.log.warn({ failure: signature, ...extra }, `${this.what}: ${message}`);
      return;
    }
    c.count++;
    c.suppressed++;
    if (now - c.lastReportAt >= this.summaryIntervalMs) {
      this.log.warn(
        { failure: signature, repeated: c.suppressed, failingForMs: now - c.since, ...extra },
        `${this.what}: still failing (${c.suppressed} more times since last report): ${message}`,
      );
      c.lastReportAt = now;
      c.suppressed = 0;
    }
  }

  /** Escalates once a failure has lasted long enough that an operator must act. */
  failingForMs(now: number): number {
    return this.current ? now - this.current.since : 0;
  }

  success(now: number): void {
    const c = this.current;
    if (!c) return;
    this.log.info({ failures: c.count, failedForMs: now - c.since }, `${this.what}: recovered`);
    this.current = null;
  }
}
