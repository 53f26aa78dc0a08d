import { z } from 'zod';

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

const notBefore = z
  .union([z.string(), z.null()])
  .optional()
  .transform((v, ctx) => {
    if (v === undefined || v === null || v.trim() === '') return null;
    const trimmed = v.trim();
    const ms = Date.parse(trimmed);
    if (!RFC1123.test(trimmed) && !/^\d{4}-\d{2}-\d{2}T/.test(trimmed)) {
      ctx.addIssue({ code: 'custom', message: `NotBefore is not an RFC 1123 date: ${JSON.stringify(v)}` });
      return z.NEVER;
    }
    if (Number.isNaN(ms)) {
      ctx.addIssue({ code: 'custom', message: `NotBefore is not a valid date: ${JSON.stringify(v)}` });
      return z.NEVER;
    }
    return new Date(ms).toISOString();
  });

const eventSchema = z.object({
  EventId: z.string().trim().min(1, 'EventId is empty'),
  EventType: z.string(),
  EventStatus: z.string().min(1, 'EventStatus is empty'),
  EventSource: z.string().optional().default(''),
  ResourceType: z.string().optional().default(''),
  Resources: z.array(z.string()).optional().default([]),
  Description: z.string().optional().default(''),
  NotBefore: notBefore,
  DurationInSeconds: z.number().int().optional().default(-1),
});

const documentSchema = z.object({
  DocumentIncarnation: z.number().int().nonnegative(),
  Events: z.array(eventSchema),
});

export type ParseResult =
  | { readonly ok: true; readonly document: ScheduledEventsDocument }
  | { readonly ok: false; readonly reason: string };

/** Validates a decoded JSON body; never throws. Unknown extra fields are ignored (newer api-versions). */
export function parseScheduledEventsDocument(body: unknown): ParseResult {
  const parsed = documentSchema.safeParse(body);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    const where = first?.path.length ? first.path.join('.') : 'document';
    return { ok: false, reason: `${where}: ${first?.message ?? 'invalid'}` };
  }
  const doc = parsed.data;
  return {
    ok: true,
    document: {
      DocumentIncarnation: doc.DocumentIncarnation,
      Events: doc.Events.map((e) => ({ ...e, Resources: [...e.Resources] })),
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
