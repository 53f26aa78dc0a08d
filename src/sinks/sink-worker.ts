import PQueue from 'p-queue';
import { type Clock, isoTime } from '../clock.ts';
import { FailureLog } from '../failure-log.ts';
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
  private persistedSeq = 0;
  private readPos = 0;
  private readonly readFailures: FailureLog;
  private loop: Promise<void> | null = null;
  private draining = false;
  private savingCursor: Promise<void> = Promise.resolve();

  constructor(o: SinkWorkerOptions, shared: Shared) {
    this.name = o.name;
    this.o = o;
    this.s = shared;
    this.queue = new PQueue({ concurrency: o.maxInFlightBatches });
    this.readFailures = new FailureLog(shared.log, `sink ${o.name}: reading the spool`);
  }

  /** The cursor as last saved: compaction must not pass it, or a crash would lose records. */
  get deliveredSeq(): number {
    return this.persistedSeq;
  }

  async start(): Promise<void> {
    this.cursor = await this.s.spool.loadCursor(this.name);
    this.persistedSeq = this.cursor;
    this.readPos = this.cursor;
    this.loop = this.run();
  }

  private async run(): Promise<void> {
    const { spool, clock } = this.s;
    while (!this.stopReading.signal.aborted) {
      if (this.queue.pending + this.queue.size >= this.o.maxInFlightBatches) {
        await this.nextSlotOrStop();
        continue;
      }
      let batch: SpooledRecord[];
      try {
        batch = await spool.read(this.readPos, this.o.maxBatchRecords);
        this.readFailures.success(clock.now());
      } catch (err) {
        // An unreadable segment must not end the worker (or the process): report, wait, retry.
        this.readFailures.failure(
          clock.now(),
          (err as NodeJS.ErrnoException).code ?? 'read',
          (err as Error).message,
        );
        await clock.sleep(1000, this.stopReading.signal);
        continue;
      }
      if (batch.length === 0) {
        if (this.draining) break;
        await spool.waitForAppend(this.readPos, this.stopReading.signal);
        continue;
      }
      this.enqueue(batch);
    }
  }

  private enqueue(batch: readonly SpooledRecord[]): Promise<void> {
    this.reportGaps(batch);
    this.readPos = batch.at(-1)!.seq;
    const slot = { lastSeq: this.readPos, done: false };
    this.inFlight.push(slot);
    return this.queue
      .add(() => this.deliver(batch))
      .then((delivered) => {
        if (delivered) {
          slot.done = true;
          this.commit();
        }
      })
      .catch((err) => this.s.log.error({ err, sink: this.name }, 'sink worker: unexpected delivery error'));
  }

  /** Sequence numbers missing before or inside a batch were dropped from a full spool. */
  private reportGaps(batch: readonly SpooledRecord[]): void {
    let expected = this.readPos + 1;
    for (const e of batch) {
      if (e.seq > expected) {
        this.s.stats.add(`sink.${this.name}.lostToSpoolOverflow`, e.seq - expected);
        this.s.log.error(
          { sink: this.name, fromSeq: expected, toSeq: e.seq - 1 },
          'records were dropped from a full spool before this sink delivered them',
        );
      }
      expected = e.seq + 1;
    }
  }

  /** Resolves when a batch finishes or the worker stops; leaves no listener behind. */
  private nextSlotOrStop(): Promise<void> {
    const signal = this.stopReading.signal;
    if (signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        this.queue.removeEventListener('next', done);
        signal.removeEventListener('abort', done);
        resolve();
      };
      this.queue.addEventListener('next', done);
      signal.addEventListener('abort', done);
    });
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
      .then(() => {
        this.persistedSeq = seq;
      })
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
      // Retry-After is honoured up to the sink's longest retry delay: a far-off date (or a skewed clock) must not park the sink.
      const retryAfter = Math.min(result.retryAfterMs ?? 0, this.o.retry.maxDelayMs);
      const delay = Math.max(retryAfter, backoffDelayMs(this.o.retry, attempt, this.s.random));
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
   * Delivers what is in the spool now, then stops. At `deadlineMs`, retries are abandoned and a
   * send still under way is left behind: what was not delivered stays in the spool for the next
   * start. Resolves true when this sink caught up with the spool.
   */
  async drain(deadlineMs: number): Promise<boolean> {
    this.draining = true;
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<void>((resolve) => {
      timer = setTimeout(
        () => {
          this.abortRetries.abort();
          resolve();
        },
        Math.max(0, deadlineMs - this.s.clock.now()),
      );
    });
    try {
      this.stopReading.abort();
      await this.loop;
      // Records spooled before the drain started but not yet read.
      while (this.readPos < this.s.spool.lastSeq && !this.abortRetries.signal.aborted) {
        let batch: SpooledRecord[];
        try {
          batch = await this.s.spool.read(this.readPos, this.o.maxBatchRecords);
        } catch (err) {
          this.s.log.error(
            { err, sink: this.name },
            'spool unreadable during shutdown; the rest stays spooled',
          );
          break;
        }
        if (batch.length === 0) break;
        await Promise.race([this.enqueue(batch), deadline]);
      }
      await Promise.race([this.queue.onIdle(), deadline]);
      await this.savingCursor;
      return this.cursor >= this.s.spool.lastSeq;
    } finally {
      clearTimeout(timer);
    }
  }
}
