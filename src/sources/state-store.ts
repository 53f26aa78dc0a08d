import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { writeFileAtomic } from '../fs-durable.ts';
import type { Logger } from '../log.ts';
import { EMPTY_WATCH_STATE, type WatchState } from './diff.ts';

const FILE = 'watch-state.json';
const FORMAT = 1;

const eventSchema = z.object({
  EventId: z.string(),
  EventType: z.string(),
  EventStatus: z.string(),
  EventSource: z.string(),
  ResourceType: z.string(),
  Resources: z.array(z.string()),
  Description: z.string(),
  NotBefore: z.string().nullable(),
  DurationInSeconds: z.number(),
});

const fileSchema = z.object({
  format: z.literal(FORMAT),
  documentIncarnation: z.number().nullable(),
  events: z.record(z.string(), z.object({ event: eventSchema, firstSeen: z.string(), started: z.boolean() })),
});

/** The last processed document and each event's FirstSeen, persisted atomically in the state directory. */
export class WatchStateStore {
  readonly path: string;
  private readonly log: Logger;

  constructor(stateDir: string, log: Logger) {
    this.path = join(stateDir, FILE);
    this.log = log;
  }

  /** A missing file is a first start; an unreadable or corrupt one is a warned fresh start, never a crash. */
  async load(): Promise<{ state: WatchState; restored: boolean }> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT')
        return { state: EMPTY_WATCH_STATE, restored: false };
      this.log.warn(
        { err, path: this.path },
        'watch state unreadable; starting fresh (events present now will be reported as appeared again, with the same RecordId)',
      );
      return { state: EMPTY_WATCH_STATE, restored: false };
    }
    try {
      const parsed = fileSchema.parse(JSON.parse(text));
      return {
        state: { documentIncarnation: parsed.documentIncarnation, events: parsed.events },
        restored: true,
      };
    } catch (err) {
      this.log.warn(
        { path: this.path, reason: err instanceof Error ? err.message.slice(0, 300) : String(err) },
        'watch state corrupt; starting fresh (events present now will be reported as appeared again, with the same RecordId)',
      );
      return { state: EMPTY_WATCH_STATE, restored: false };
    }
  }

  async save(state: WatchState): Promise<void> {
    await writeFileAtomic(this.path, `${JSON.stringify({ format: FORMAT, ...state })}\n`);
  }
}
