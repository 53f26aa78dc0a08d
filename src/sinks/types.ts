import type * as v from 'valibot';
import type { Clock } from '../clock.ts';
import type { Logger } from '../log.ts';
import type { ScheduledEventRecord } from '../transform/record.ts';

/** What a sink says about one batch. The dispatcher owns every retry and dead-letter decision. */
export type SendResult =
  | { readonly kind: 'ok' }
  | { readonly kind: 'retryable'; readonly reason: string; readonly retryAfterMs?: number }
  | { readonly kind: 'failed'; readonly reason: string };

export const ok: SendResult = Object.freeze({ kind: 'ok' });
export const retryable = (reason: string, retryAfterMs?: number): SendResult =>
  retryAfterMs === undefined ? { kind: 'retryable', reason } : { kind: 'retryable', reason, retryAfterMs };
export const failed = (reason: string): SendResult => ({ kind: 'failed', reason });

export interface Sink {
  /** Must resolve only when the batch is durably accepted: the spool cursor advances on `ok`. */
  send(batch: readonly ScheduledEventRecord[]): Promise<SendResult>;
  /** Safe to call twice. */
  close(): Promise<void>;
}

export interface SinkContext {
  readonly name: string;
  readonly log: Logger;
  readonly clock: Clock;
  readonly stateDir: string;
  readonly stdout: NodeJS.WritableStream & { isTTY?: boolean };
}

export type SettingsEntries = Record<string, v.BaseSchema<unknown, unknown, v.BaseIssue<unknown>>>;

/** One per sink folder; the registry lists them. `create` may import heavy SDKs lazily. */
export interface SinkDefinition<E extends SettingsEntries = SettingsEntries> {
  readonly type: string;
  /** Sink-specific settings (with `type`); the common ones (name, batching, retry) are added by the config schema. */
  readonly settings: E;
  create(settings: v.InferOutput<v.ObjectSchema<E, undefined>>, ctx: SinkContext): Promise<Sink>;
}
