import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { diffDocument, EMPTY_WATCH_STATE, type EventChange, type WatchState } from '../src/sources/diff.ts';
import type { ScheduledEvent, ScheduledEventsDocument } from '../src/sources/imds/document.ts';

const T = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s)).toISOString();

function ev(id: string, over: Partial<ScheduledEvent> = {}): ScheduledEvent {
  return {
    EventId: id,
    EventType: 'Reboot',
    EventStatus: 'Scheduled',
    EventSource: 'Platform',
    ResourceType: 'VirtualMachine',
    Resources: ['vm0'],
    Description: '',
    NotBefore: T(900),
    DurationInSeconds: -1,
    ...over,
  };
}

const doc = (inc: number, ...events: ScheduledEvent[]): ScheduledEventsDocument => ({
  DocumentIncarnation: inc,
  Events: events,
});
const watched = (s: number) => ({ observedAt: T(s), watchedWithoutGap: true });
const kinds = (changes: readonly EventChange[]) =>
  changes.map((c) => `${c.change}${c.outcome ? `:${c.outcome}` : ''}:${c.event.EventId}`);

describe('diffDocument', () => {
  it('reports a new Scheduled event as appeared with FirstSeen = observation time', () => {
    const { changes, next } = diffDocument(EMPTY_WATCH_STATE, doc(2, ev('A')), watched(1));
    expect(kinds(changes)).toEqual(['appeared:A']);
    expect(changes[0]!.firstSeen).toBe(T(1));
    expect(next.events.a!.started).toBe(false);
  });

  it('reports Scheduled -> Started as started, keeping FirstSeen', () => {
    const s1 = diffDocument(EMPTY_WATCH_STATE, doc(2, ev('A')), watched(1)).next;
    const { changes } = diffDocument(
      s1,
      doc(3, ev('A', { EventStatus: 'Started', NotBefore: null })),
      watched(2),
    );
    expect(kinds(changes)).toEqual(['started:A']);
    expect(changes[0]!.firstSeen).toBe(T(1));
    expect(changes[0]!.documentIncarnation).toBe(3);
  });

  it('reports an event that appears already Started (host failure) as appeared then started', () => {
    const { changes } = diffDocument(
      EMPTY_WATCH_STATE,
      doc(2, ev('A', { EventStatus: 'Started', NotBefore: null })),
      watched(1),
    );
    expect(kinds(changes)).toEqual(['appeared:A', 'started:A']);
  });

  it('removed after Started is completed', () => {
    let s = diffDocument(EMPTY_WATCH_STATE, doc(2, ev('A')), watched(1)).next;
    s = diffDocument(s, doc(3, ev('A', { EventStatus: 'Started', NotBefore: null })), watched(2)).next;
    expect(kinds(diffDocument(s, doc(4), watched(3)).changes)).toEqual(['removed:completed:A']);
  });

  it('removed while Scheduled and watched without a gap is cancelled', () => {
    const s = diffDocument(EMPTY_WATCH_STATE, doc(2, ev('A')), watched(1)).next;
    expect(kinds(diffDocument(s, doc(3), watched(2)).changes)).toEqual(['removed:cancelled:A']);
  });

  it('removed while Scheduled across a gap (restart, VM reboot) is unknown', () => {
    const s = diffDocument(EMPTY_WATCH_STATE, doc(2, ev('A')), watched(1)).next;
    const { changes } = diffDocument(s, doc(3), { observedAt: T(600), watchedWithoutGap: false });
    expect(kinds(changes)).toEqual(['removed:unknown:A']);
  });

  it('reports other field changes with the same status as updated', () => {
    const s = diffDocument(EMPTY_WATCH_STATE, doc(2, ev('A')), watched(1)).next;
    for (const over of [
      { NotBefore: T(1800) },
      { Resources: ['vm0', 'vm1'] },
      { Description: 'x' },
      { DurationInSeconds: 5 },
    ]) {
      expect(kinds(diffDocument(s, doc(3, ev('A', over)), watched(2)).changes)).toEqual(['updated:A']);
    }
  });

  it('treats Resources as a set and EventId case-insensitively', () => {
    const s = diffDocument(
      EMPTY_WATCH_STATE,
      doc(2, ev('abc-1', { Resources: ['vm0', 'vm1'] })),
      watched(1),
    ).next;
    const { changes, next } = diffDocument(s, doc(2, ev('ABC-1', { Resources: ['vm1', 'vm0'] })), watched(2));
    expect(changes).toEqual([]);
    expect(next.events['abc-1']).toBeDefined();
  });

  it('compares content, not DocumentIncarnation: a reset incarnation still yields the new event', () => {
    let s = diffDocument(EMPTY_WATCH_STATE, doc(5, ev('A')), watched(1)).next;
    s = diffDocument(s, doc(1), watched(2)).next;
    const { changes } = diffDocument(s, doc(2, ev('B')), watched(3));
    expect(kinds(changes)).toEqual(['appeared:B']);
    // Same incarnation number as before but different content: both changes are seen.
    const s2 = diffDocument(EMPTY_WATCH_STATE, doc(2, ev('A')), watched(1)).next;
    expect(kinds(diffDocument(s2, doc(2, ev('B')), watched(2)).changes)).toEqual([
      'appeared:B',
      'removed:cancelled:A',
    ]);
  });

  it('emits nothing for an identical document', () => {
    const s = diffDocument(EMPTY_WATCH_STATE, doc(2, ev('A'), ev('B')), watched(1)).next;
    expect(diffDocument(s, doc(2, ev('A'), ev('B')), watched(2)).changes).toEqual([]);
  });

  it('never emits started twice in one lifecycle, even if the status flaps', () => {
    let s = diffDocument(EMPTY_WATCH_STATE, doc(2, ev('A', { EventStatus: 'Started' })), watched(1)).next;
    const back = diffDocument(s, doc(3, ev('A')), watched(2));
    expect(kinds(back.changes)).toEqual(['updated:A']);
    s = back.next;
    expect(kinds(diffDocument(s, doc(4, ev('A', { EventStatus: 'Started' })), watched(3)).changes)).toEqual([
      'updated:A',
    ]);
  });

  it('counts a duplicated EventId within one document once', () => {
    expect(kinds(diffDocument(EMPTY_WATCH_STATE, doc(2, ev('A'), ev('a')), watched(1)).changes)).toEqual([
      'appeared:A',
    ]);
  });

  it('does not mutate its input state', () => {
    const s = diffDocument(EMPTY_WATCH_STATE, doc(2, ev('A')), watched(1)).next;
    const copy = structuredClone(s);
    diffDocument(s, doc(3), watched(2));
    expect(s).toEqual(copy);
  });
});

/** Random documents over a small id pool, so events reappear, start, vanish and come back. */
const eventArb = fc.record({
  id: fc.constantFrom('e1', 'E1', 'e2', 'e3'),
  started: fc.boolean(),
  notBefore: fc.constantFrom(T(100), T(200), null),
  resources: fc.constantFrom(['vm0'], ['vm0', 'vm1'], ['vm1']),
});
const docArb = fc.record({
  inc: fc.nat(20),
  events: fc.array(eventArb, { maxLength: 4 }),
  gap: fc.boolean(),
  restart: fc.boolean(),
});

function toDoc(d: {
  inc: number;
  events: readonly { id: string; started: boolean; notBefore: string | null; resources: readonly string[] }[];
}) {
  return doc(
    d.inc,
    ...d.events.map((e) =>
      ev(e.id, {
        EventStatus: e.started ? 'Started' : 'Scheduled',
        NotBefore: e.started ? null : e.notBefore,
        Resources: e.resources,
      }),
    ),
  );
}

describe('diffDocument properties', () => {
  it('per EventId: appeared < started < removed, each at most once per lifecycle; updated only inside one', () => {
    fc.assert(
      fc.property(fc.array(docArb, { maxLength: 25 }), (docs) => {
        let state: WatchState = EMPTY_WATCH_STATE;
        const phase = new Map<string, 'absent' | 'appeared' | 'started'>();
        docs.forEach((d, i) => {
          // A restart round-trips the state through JSON, as the state file does.
          if (d.restart) state = JSON.parse(JSON.stringify(state)) as WatchState;
          const { changes, next } = diffDocument(state, toDoc(d), {
            observedAt: T(i),
            watchedWithoutGap: !d.gap,
          });
          for (const c of changes) {
            const key = c.event.EventId.toLowerCase();
            const p = phase.get(key) ?? 'absent';
            if (c.change === 'appeared') {
              expect(p).toBe('absent');
              phase.set(key, 'appeared');
            } else if (c.change === 'started') {
              expect(p).toBe('appeared');
              phase.set(key, 'started');
            } else if (c.change === 'updated') {
              expect(p).not.toBe('absent');
            } else {
              expect(p).not.toBe('absent');
              expect(c.outcome).toBe(p === 'started' ? 'completed' : d.gap ? 'unknown' : 'cancelled');
              phase.set(key, 'absent');
            }
          }
          state = next;
          // The state tracks exactly the events of the document just processed.
          expect(Object.keys(state.events).sort()).toEqual(
            [...new Set(d.events.map((e) => e.id.toLowerCase()))].sort(),
          );
        });
      }),
      { numRuns: 500 },
    );
  });

  it('processing the same document twice yields nothing the second time', () => {
    fc.assert(
      fc.property(docArb, docArb, (a, b) => {
        const s1 = diffDocument(EMPTY_WATCH_STATE, toDoc(a), watched(1)).next;
        const s2 = diffDocument(s1, toDoc(b), watched(2)).next;
        expect(diffDocument(s2, toDoc(b), watched(3)).changes).toEqual([]);
      }),
      { numRuns: 300 },
    );
  });

  it('every event of a document is tracked after it, with started set when its status is Started', () => {
    fc.assert(
      fc.property(fc.array(docArb, { minLength: 1, maxLength: 10 }), (docs) => {
        let state: WatchState = EMPTY_WATCH_STATE;
        for (const [i, d] of docs.entries()) state = diffDocument(state, toDoc(d), watched(i)).next;
        const last = docs.at(-1)!;
        const seen = new Set<string>();
        for (const e of last.events) {
          const key = e.id.toLowerCase();
          if (seen.has(key)) continue;
          seen.add(key);
          if (e.started) expect(state.events[key]!.started).toBe(true);
        }
      }),
    );
  });
});
