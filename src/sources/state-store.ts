import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as v from 'valibot';
import { writeFileAtomic } from '../fs-durable.ts';
import type { Logger } from '../log.ts';
import { EMPTY_WATCH_STATE, type WatchState } from './diff.ts';

const FILE = 'watch-state.json';
const FORMAT = 1;

const eventSchema = v.object({
  EventId: v.string(),
  EventType: v.string(),
  EventStatus: v.string(),
  EventSource: v.string(),
  ResourceType: v.string(),
  Resources: v.array(v.string()),
  Description: v.string(),
  NotBefore: v.nullable(v.string()),
  DurationInSeconds: v.number(),
});

const fileSchema = v.object({
  format: v.literal(FORMAT),
  documentIncarnation: v.nullable(v.number()),
  events: v.record(v.string(), v.object({ event: eventSchema, firstSeen: v.string(), started: v.boolean() })),
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
      const parsed = v.parse(fileSchema, JSON.parse(text));
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
