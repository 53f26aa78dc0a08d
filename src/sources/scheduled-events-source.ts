import { type Clock, isoTime } from '../clock.ts';
import type { Logger } from '../log.ts';
import { type BackoffPolicy, backoffDelayMs } from '../retry/backoff.ts';
import type { Stats } from '../stats.ts';
import { diffDocument, EMPTY_WATCH_STATE, type EventChange, type WatchState } from './diff.ts';
import { FailureLog } from '../failure-log.ts';
import { failureSignature, type ImdsClient, type ImdsFailure } from './imds/client.ts';
import type { ScheduledEventsDocument } from './imds/document.ts';
import type { WatchStateStore } from './state-store.ts';

/**
 * Receives the changes of one document. Resolves true once they are durable (spooled); false
 * asks to be offered the same changes again after the next poll (e.g. identity not known yet).
 * The watch state is persisted only after true, so a crash before that re-detects the changes.
 * `final` is set once, on shutdown: the handler must take the changes then, whatever it lacks,
 * because an event that came and went meanwhile would otherwise never be recorded.
 */
export type ChangeHandler = (changes: readonly EventChange[], final: boolean) => Promise<boolean>;

export interface ScheduledEventsSourceOptions {
  readonly client: ImdsClient;
  readonly store: WatchStateStore;
  readonly handler: ChangeHandler;
  readonly clock: Clock;
  readonly log: Logger;
  readonly stats: Stats;
  readonly pollIntervalMs: number;
  readonly requestTimeoutMs: number;
  /** Until IMDS first answers: its first response after enabling may take up to 2 minutes. */
  readonly firstRequestTimeoutMs: number;
  readonly watchGapToleranceMs: number;
  readonly backoff: BackoffPolicy;
  /** IMDS documents 410 Gone as "retry for up to 70 s". */
  readonly goneRetryWindowMs: number;
  readonly random?: () => number;
}

/** Polls Scheduled Events, never overlapping, and turns each change of the document into EventChanges. */
export class ScheduledEventsSource {
  private readonly o: ScheduledEventsSourceOptions;
  private readonly failures: FailureLog;
  private readonly stop = new AbortController();
  private state: WatchState = EMPTY_WATCH_STATE;
  private readonly outbox: { changes: readonly EventChange[]; next: WatchState }[] = [];
  private lastSuccessAt: number | null = null;
  private answeredOnce = false;
  private consecutiveFailures = 0;
  private goneSince: number | null = null;
  private loop: Promise<void> | null = null;

  constructor(options: ScheduledEventsSourceOptions) {
    this.o = options;
    this.failures = new FailureLog(options.log, 'IMDS scheduled events');
  }

  /** Loads the persisted state, then polls until stop(). */
  async start(): Promise<void> {
    const { state, restored } = await this.o.store.load();
    this.state = state;
    if (restored) {
      this.o.log.info(
        { trackedEvents: Object.keys(state.events).length, documentIncarnation: state.documentIncarnation },
        'restored watch state',
      );
    }
    this.loop = this.run();
  }

  async stopPolling(): Promise<void> {
    this.stop.abort();
    await this.loop;
    await this.flushOutbox(true);
  }

  get pendingChanges(): number {
    return this.outbox.reduce((n, item) => n + item.changes.length, 0);
  }

  private async run(): Promise<void> {
    const { clock, pollIntervalMs } = this.o;
    while (!this.stop.signal.aborted) {
      const startedAt = clock.now();
      const timeoutMs = this.answeredOnce ? this.o.requestTimeoutMs : this.o.firstRequestTimeoutMs;
      const res = await this.o.client.getScheduledEvents(timeoutMs);
      if (this.stop.signal.aborted) break;
      const now = clock.now();
      let delayMs = pollIntervalMs - (now - startedAt);
      this.o.stats.add('imds.polls');
      if (res.ok) {
        this.answeredOnce = true;
        this.consecutiveFailures = 0;
        this.goneSince = null;
        this.failures.success(now);
        await this.process(res.value, now);
      } else {
        // Any answer at all means the service is enabled: only silence keeps the long timeout.
        if (res.failure.kind !== 'connection' && res.failure.kind !== 'timeout') this.answeredOnce = true;
        this.o.stats.add('imds.failures');
        delayMs = this.retryDelayMs(res.failure, now);
      }
      await clock.sleep(Math.max(0, delayMs), this.stop.signal);
    }
  }

  private retryDelayMs(failure: ImdsFailure, now: number): number {
    const { pollIntervalMs, goneRetryWindowMs } = this.o;
    this.failures.failure(now, failureSignature(failure), failure.message, {
      retryAfterMs: failure.retryAfterMs,
    });
    if (failure.status === 410) {
      this.goneSince ??= now;
      if (now - this.goneSince < goneRetryWindowMs) return pollIntervalMs;
      if (now - this.goneSince - goneRetryWindowMs < pollIntervalMs) {
        this.o.log.error(
          { goneForMs: now - this.goneSince },
          'IMDS keeps answering 410 Gone past its documented 70 s; backing off',
        );
      }
    } else {
      this.goneSince = null;
    }
    const attempt = this.consecutiveFailures++;
    const backoff = backoffDelayMs(this.o.backoff, attempt, this.o.random);
    // Retry-After is honoured up to the backoff cap: a far-off date must not stop the watch
    // (Spot evictions give 30 seconds of notice).
    const retryAfter = Math.min(failure.retryAfterMs ?? 0, this.o.backoff.maxDelayMs);
    return Math.max(pollIntervalMs, backoff, retryAfter);
  }

  private async process(doc: ScheduledEventsDocument, now: number): Promise<void> {
    const watchedWithoutGap =
      this.lastSuccessAt !== null && now - this.lastSuccessAt <= this.o.watchGapToleranceMs;
    this.lastSuccessAt = now;
    const { changes, next } = diffDocument(this.state, doc, { observedAt: isoTime(now), watchedWithoutGap });
    this.state = next;
    if (changes.length > 0) {
      this.o.stats.add('changes.detected', changes.length);
      this.outbox.push({ changes, next });
    }
    await this.flushOutbox();
  }

  private async flushOutbox(final = false): Promise<void> {
    while (this.outbox.length > 0) {
      const item = this.outbox[0]!;
      try {
        if (!(await this.o.handler(item.changes, final))) return;
      } catch (err) {
        this.o.log.error({ err }, 'could not spool change records; will retry after the next poll');
        return;
      }
      this.outbox.shift();
      try {
        await this.o.store.save(item.next);
      } catch (err) {
        // The records are spooled; a stale state only means duplicates (same RecordId) after a restart.
        this.o.log.error({ err, path: this.o.store.path }, 'could not persist watch state');
      }
    }
  }
}
