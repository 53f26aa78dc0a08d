import type { Logger } from '../log.ts';
import type { SinkWorker } from './sink-worker.ts';
import type { Spool } from './spool.ts';

/** Runs one worker per sink over the shared spool and deletes segments every sink has passed. */
export class Dispatcher {
  private readonly spool: Spool;
  private readonly workers: readonly SinkWorker[];
  private readonly log: Logger;
  private readonly compactEveryMs: number;
  private timer: NodeJS.Timeout | null = null;

  constructor(spool: Spool, workers: readonly SinkWorker[], log: Logger, compactEveryMs = 60_000) {
    this.spool = spool;
    this.workers = workers;
    this.log = log;
    this.compactEveryMs = compactEveryMs;
  }

  async start(): Promise<void> {
    for (const w of this.workers) await w.start();
    this.spool.minDeliveredSeq = () => this.minDeliveredSeq();
    this.timer = setInterval(() => void this.compact(), this.compactEveryMs);
    this.timer.unref();
  }

  private minDeliveredSeq(): number {
    return this.workers.length === 0
      ? this.spool.lastSeq
      : Math.min(...this.workers.map((w) => w.deliveredSeq));
  }

  async compact(): Promise<void> {
    if (this.workers.length === 0) return;
    const minCursor = this.minDeliveredSeq();
    try {
      const removed = await this.spool.compact(minCursor);
      if (removed > 0) this.log.debug({ removed, minCursor }, 'spool compacted');
    } catch (err) {
      this.log.warn({ err }, 'spool compaction failed; will try again');
    }
  }

  /** Drains every sink in parallel until `deadlineMs`; true when every sink caught up with the spool. */
  async drain(deadlineMs: number): Promise<boolean> {
    if (this.timer) clearInterval(this.timer);
    const results = await Promise.all(this.workers.map((w) => w.drain(deadlineMs)));
    await this.compact();
    results.forEach((caughtUp, i) => {
      if (!caughtUp) {
        this.log.warn(
          {
            sink: this.workers[i]!.name,
            deliveredSeq: this.workers[i]!.deliveredSeq,
            spooledSeq: this.spool.lastSeq,
          },
          'shutdown deadline reached before this sink caught up; the rest stays spooled for the next start',
        );
      }
    });
    return results.every(Boolean);
  }
}
