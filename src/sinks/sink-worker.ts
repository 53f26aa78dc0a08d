import PQueue from 'p-queue';
import { type Clock, isoTime } from '../clock.ts';
import type { Logger } from '../log.ts';
import { type BackoffPolicy, backoffDelayMs } from '../retry/backoff.ts';
import type { Stats } from '../stats.ts';
import type { DeadLetterFile } from './dead-letter.ts';
import type { Spool, SpooledRecord } from './spool.ts';
import type { SendResult, Sink } from './types.ts';

export interface SinkWorkerOptions {
  readonly name: string;
  readonly sink: Sink;
  readonly maxBatchRecords: number;
  readonly maxInFlightBatches: number;
  readonly retry: BackoffPolicy;
}

interface Shared {
  readonly spool: Spool;
  readonly deadLetter: DeadLetterFile;
  readonly clock: Clock;
  readonly log: Logger;
  readonly stats: Stats;
  readonly random?: () => number;
}

/**
 * Feeds one sink from the spool with its own cursor. Batches may be in flight together (bounded
 * by a p-queue) but the cursor only advances over a contiguous run of finished batches, so a
 * crash never skips a record. A slow sink only holds up its own worker.
 */
export class SinkWorker {
  readonly name: string;
  private readonly o: SinkWorkerOptions;
  private readonly s: Shared;
  private readonly queue: PQueue;
  private readonly stopReading = new AbortController();
  private readonly abortRetries = new AbortController();
  private readonly inFlight: { lastSeq: number; done: boolean }[] = [];
  private cursor = 0;
  private readPos = 0;
  private loop: Promise<void> | null = null;
  private draining = false;
  private savingCursor: Promise<void> = Promise.resolve();

  constructor(o: SinkWorkerOptions, shared: Shared) {
    this.name = o.name;
    this.o = o;
    this.s = shared;
    this.queue = new PQueue({ concurrency: o.maxInFlightBatches });
  }

  get deliveredSeq(): number {
    return this.cursor;
  }

  async start(): Promise<void> {
    this.cursor = await this.s.spool.loadCursor(this.name);
    this.readPos = this.cursor;
    this.loop = this.run();
  }

  private async run(): Promise<void> {
    const { spool } = this.s;
    while (!this.stopReading.signal.aborted) {
      if (this.queue.pending + this.queue.size >= this.o.maxInFlightBatches) {
        await Promise.race([
          new Promise<void>((r) => this.queue.addEventListener('next', () => r(), { once: true })),
          this.aborted(),
        ]);
        continue;
      }
      const batch = await spool.read(this.readPos, this.o.maxBatchRecords);
      if (batch.length === 0) {
        if (this.draining) break;
        await spool.waitForAppend(this.readPos, this.stopReading.signal);
        continue;
      }
      const first = batch[0]!.seq;
      if (first > this.readPos + 1) {
        this.s.stats.add(`sink.${this.name}.lostToSpoolOverflow`, first - this.readPos - 1);
        this.s.log.error(
          { sink: this.name, fromSeq: this.readPos + 1, toSeq: first - 1 },
          'records were dropped from a full spool before this sink delivered them',
        );
      }
      this.readPos = batch.at(-1)!.seq;
      const slot = { lastSeq: this.readPos, done: false };
      this.inFlight.push(slot);
      this.queue
        .add(() => this.deliver(batch))
        .then((delivered) => {
          if (delivered) {
            slot.done = true;
            this.commit();
          }
        })
        .catch((err) => this.s.log.error({ err, sink: this.name }, 'sink worker: unexpected delivery error'));
    }
  }

  private aborted(): Promise<void> {
    const signal = this.stopReading.signal;
    return signal.aborted
      ? Promise.resolve()
      : new Promise((r) => signal.addEventListener('abort', () => r(), { once: true }));
  }

  private commit(): void {
    let advanced = false;
    while (this.inFlight[0]?.done) {
      this.cursor = this.inFlight.shift()!.lastSeq;
      advanced = true;
    }
    if (!advanced) return;
    const seq = this.cursor;
    this.savingCursor = this.savingCursor
      .then(() => this.s.spool.saveCursor(this.name, seq))
      .catch((err) =>
        this.s.log.error(
          { err, sink: this.name },
          'could not save sink cursor (records may be delivered twice)',
        ),
      );
  }

  /** True when the batch is finished (delivered or dead-lettered); false when abandoned by shutdown. */
  private async deliver(batch: readonly SpooledRecord[]): Promise<boolean> {
    const { stats, log, clock } = this.s;
    const records = batch.map((e) => e.record);
    for (let attempt = 0; ; attempt++) {
      let result: SendResult;
      try {
        result = await this.o.sink.send(records);
      } catch (err) {
        result = { kind: 'retryable', reason: `sink threw: ${(err as Error).message}` };
      }
      if (result.kind === 'ok') {
        stats.add(`sink.${this.name}.sent`, records.length);
        if (attempt > 0) log.info({ sink: this.name, attempts: attempt + 1 }, 'sink delivered after retries');
        return true;
      }
      if (result.kind === 'failed') {
        await this.deadLetter(batch, result.reason);
        return true;
      }
      stats.add(`sink.${this.name}.retries`);
      if (this.abortRetries.signal.aborted) return false;
      const delay = Math.max(result.retryAfterMs ?? 0, backoffDelayMs(this.o.retry, attempt, this.s.random));
      const logFn = attempt === 0 || attempt % 10 === 0 ? log.warn.bind(log) : log.debug.bind(log);
      logFn(
        { sink: this.name, attempt: attempt + 1, delayMs: delay, reason: result.reason },
        'sink send failed; will retry',
      );
      await clock.sleep(delay, this.abortRetries.signal);
      if (this.abortRetries.signal.aborted) return false;
    }
  }

  private async deadLetter(batch: readonly SpooledRecord[], reason: string): Promise<void> {
    const { stats, log, clock, deadLetter } = this.s;
    for (;;) {
      try {
        await deadLetter.write(this.name, reason, batch, isoTime(clock.now()));
        break;
      } catch (err) {
        // Without the dead-letter copy the cursor must not pass these records.
        log.error({ err, sink: this.name }, 'could not write dead-letter file; retrying');
        await clock.sleep(1000, this.abortRetries.signal);
        if (this.abortRetries.signal.aborted) throw err;
      }
    }
    stats.add(`sink.${this.name}.deadLettered`, batch.length);
    log.error(
      { sink: this.name, records: batch.length, reason, file: deadLetter.pathFor(this.name) },
      'sink refused records for good; moved to dead-letter',
    );
  }

  /**
   * Delivers what is in the spool now, then stops. At `deadlineMs`, retries are abandoned: what
   * was not delivered stays in the spool for the next start.
   */
  async drain(deadlineMs: number): Promise<boolean> {
    this.draining = true;
    const timer = setTimeout(() => this.abortRetries.abort(), Math.max(0, deadlineMs - this.s.clock.now()));
    this.stopReading.abort();
    await this.loop;
    // Records spooled before the drain started but not yet read.
    while (this.readPos < this.s.spool.lastSeq && !this.abortRetries.signal.aborted) {
      const batch = await this.s.spool.read(this.readPos, this.o.maxBatchRecords);
      if (batch.length === 0) break;
      this.readPos = batch.at(-1)!.seq;
      const slot = { lastSeq: this.readPos, done: false };
      this.inFlight.push(slot);
      await this.queue.add(async () => {
        if (await this.deliver(batch)) {
          slot.done = true;
          this.commit();
        }
      });
    }
    await this.queue.onIdle();
    clearTimeout(timer);
    await this.savingCursor;
    return this.cursor >= this.s.spool.lastSeq;
  }
}
