import * as v from 'valibot';

/**
 * The Scheduled Events document, normalized. Field names are Azure's. Older api-versions omit
 * Description, EventSource and DurationInSeconds, so those get documented neutral values.
 */
export interface ScheduledEvent {
  readonly EventId: string;
  readonly EventType: string;
  readonly EventStatus: string;
  readonly EventSource: string;
  readonly ResourceType: string;
  readonly Resources: readonly string[];
  readonly Description: string;
  /** ISO 8601 UTC, or null once started (Azure sends "") or when absent. */
  readonly NotBefore: string | null;
  /** -1: unknown or not applicable (Azure's default, and ours when the field is absent). */
  readonly DurationInSeconds: number;
}

export interface ScheduledEventsDocument {
  readonly DocumentIncarnation: number;
  readonly Events: readonly ScheduledEvent[];
}

/** RFC 1123 as Azure writes it: "Mon, 19 Sep 2016 18:29:47 GMT". */
const RFC1123 = /^[A-Z][a-z]{2}, \d{1,2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} (GMT|UTC|\+0000|Z)$/;

/** "" (started) or absent -> null; otherwise an RFC 1123 date -> ISO 8601 UTC. */
const notBefore = v.pipe(
  v.optional(v.nullable(v.string())),
  v.rawTransform(({ dataset, addIssue, NEVER }) => {
    const raw = dataset.value;
    if (raw === undefined || raw === null || raw.trim() === '') return null;
    const trimmed = raw.trim();
    const ms = Date.parse(trimmed);
    if ((!RFC1123.test(trimmed) && !/^\d{4}-\d{2}-\d{2}T/.test(trimmed)) || Number.isNaN(ms)) {
      addIssue({ message: `NotBefore is not an RFC 1123 date: ${JSON.stringify(raw)}` });
      return NEVER;
    }
    return new Date(ms).toISOString();
  }),
);

const eventSchema = v.object({
  EventId: v.pipe(v.string(), v.trim(), v.minLength(1, 'EventId is empty')),
  EventType: v.string(),
  EventStatus: v.pipe(v.string(), v.minLength(1, 'EventStatus is empty')),
  EventSource: v.optional(v.string(), ''),
  ResourceType: v.optional(v.string(), ''),
  Resources: v.optional(v.array(v.string()), []),
  Description: v.optional(v.string(), ''),
  NotBefore: notBefore,
  DurationInSeconds: v.optional(v.pipe(v.number(), v.integer()), -1),
});

const documentSchema = v.object({
  DocumentIncarnation: v.pipe(v.number(), v.integer(), v.minValue(0)),
  Events: v.array(eventSchema),
});

export type ParseResult =
  | { readonly ok: true; readonly document: ScheduledEventsDocument }
  | { readonly ok: false; readonly reason: string };

/** Validates a decoded JSON body; never throws. Unknown extra fields are ignored (newer api-versions). */
export function parseScheduledEventsDocument(body: unknown): ParseResult {
  const parsed = v.safeParse(documentSchema, body);
  if (!parsed.success) {
    const first = parsed.issues[0];
    const where = first?.path?.length ? first.path.map((p) => String(p.key)).join('.') : 'document';
    return { ok: false, reason: `${where}: ${first?.message ?? 'invalid'}` };
  }
  const doc = parsed.output;
  return {
    ok: true,
    document: {
      DocumentIncarnation: doc.DocumentIncarnation,
      Events: doc.Events.map((e) => ({ ...e, NotBefore: e.NotBefore ?? null })),
    },
  };
}

/** EventId case varies between Azure's own examples: identity is case-insensitive. */
export function eventKey(eventId: string): string {
  return eventId.trim().toLowerCase();
}

/** Formats an instant the way IMDS does, for the simulator. */
export function toRfc1123(ms: number): string {
  return new Date(ms).toUTCString();
}
