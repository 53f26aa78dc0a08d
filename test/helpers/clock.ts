import type { Clock } from '../../src/clock.ts';

/**
 * Virtual time: sleep() records the requested delay, advances the clock by it and yields to the
 * event loop at once. Backoff and rate decisions become assertions on `sleeps`, not wall-clock.
 */
export class RecordingClock implements Clock {
  private t = Date.UTC(2026, 0, 1);
  readonly sleeps: number[] = [];

  now(): number {
    return this.t;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    this.sleeps.push(ms);
    if (signal?.aborted) return Promise.resolve();
    this.t += Math.max(0, ms);
    return new Promise((r) => setTimeout(r, 1));
  }
}
