import { eventKey, type ScheduledEvent, type ScheduledEventsDocument } from './imds/document.ts';

export type ChangeKind = 'appeared' | 'started' | 'updated' | 'removed';
/** Only `removed` has an outcome; Azure has no Completed status, so it is inferred. */
export type Outcome = '' | 'completed' | 'cancelled' | 'unknown';

export interface TrackedEvent {
  readonly event: ScheduledEvent;
  /** ISO time the agent first saw this EventId. */
  readonly firstSeen: string;
  /** A `started` record was already emitted in this lifecycle. */
  readonly started: boolean;
}

/** What the agent remembers between polls and across restarts: plain, serializable data. */
export interface WatchState {
  readonly documentIncarnation: number | null;
  /** Keyed by lower-cased EventId. */
  readonly events: Readonly<Record<string, TrackedEvent>>;
}

export const EMPTY_WATCH_STATE: WatchState = Object.freeze({
  documentIncarnation: null,
  events: Object.freeze({}),
});

export interface EventChange {
  readonly change: ChangeKind;
  readonly outcome: Outcome;
  readonly event: ScheduledEvent;
  readonly firstSeen: string;
  readonly observedAt: string;
  readonly documentIncarnation: number;
}

export interface DiffContext {
  /** ISO time of the poll that returned the document. */
  readonly observedAt: string;
  /**
   * True when the previous document was seen by this process and successful polls since then
   * were no further apart than the gap tolerance. Only then can a vanished Scheduled event be
   * called cancelled; otherwise nobody can tell whether it ran.
   */
  readonly watchedWithoutGap: boolean;
}

export interface DiffResult {
  readonly changes: readonly EventChange[];
  readonly next: WatchState;
}

const STARTED = 'Started';

/**
 * Compares a document with what was last processed, by EventId content, never by
 * DocumentIncarnation alone: the service restarts the incarnation when it is re-enabled.
 */
export function diffDocument(prev: WatchState, doc: ScheduledEventsDocument, ctx: DiffContext): DiffResult {
  const changes: EventChange[] = [];
  const nextEvents: Record<string, TrackedEvent> = {};
  const base = { observedAt: ctx.observedAt, documentIncarnation: doc.DocumentIncarnation };

  for (const event of doc.Events) {
    const key = eventKey(event.EventId);
    if (nextEvents[key]) continue; // a duplicated EventId within one document is the same event
    const before = prev.events[key];
    const isStarted = event.EventStatus === STARTED;
    if (!before) {
      const firstSeen = ctx.observedAt;
      changes.push({ ...base, change: 'appeared', outcome: '', event, firstSeen });
      if (isStarted) changes.push({ ...base, change: 'started', outcome: '', event, firstSeen });
      nextEvents[key] = { event, firstSeen, started: isStarted };
      continue;
    }
    const { firstSeen } = before;
    if (isStarted && !before.started) {
      changes.push({ ...base, change: 'started', outcome: '', event, firstSeen });
    } else if (!sameEvent(before.event, event)) {
      changes.push({ ...base, change: 'updated', outcome: '', event, firstSeen });
    }
    nextEvents[key] = { event, firstSeen, started: before.started || isStarted };
  }

  for (const [key, before] of Object.entries(prev.events)) {
    if (nextEvents[key]) continue;
    const outcome: Outcome =
      before.event.EventStatus === STARTED || before.started
        ? 'completed'
        : ctx.watchedWithoutGap
          ? 'cancelled'
          : 'unknown';
    changes.push({ ...base, change: 'removed', outcome, event: before.event, firstSeen: before.firstSeen });
  }

  return { changes, next: { documentIncarnation: doc.DocumentIncarnation, events: nextEvents } };
}

/** Field-wise equality; Resources is a set, its order carries no meaning. EventId case is ignored. */
export function sameEvent(a: ScheduledEvent, b: ScheduledEvent): boolean {
  return (
    a.EventType === b.EventType &&
    a.EventStatus === b.EventStatus &&
    a.EventSource === b.EventSource &&
    a.ResourceType === b.ResourceType &&
    a.Description === b.Description &&
    a.NotBefore === b.NotBefore &&
    a.DurationInSeconds === b.DurationInSeconds &&
    sameSet(a.Resources, b.Resources)
  );
}

function sameSet(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  const sa = [...a].sort();
  const sb = [...b].sort();
  return sa.every((v, i) => v === sb[i]);
}
