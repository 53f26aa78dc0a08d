import { mkdir, open, readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fsyncDir, writeFileAtomic } from '../fs-durable.ts';
import type { Logger } from '../log.ts';
import type { Stats } from '../stats.ts';
import type { ScheduledEventRecord } from '../transform/record.ts';

export interface SpooledRecord {
  readonly seq: number;
  readonly record: ScheduledEventRecord;
}

export interface SpoolOptions {
  /** Upper bound of all segments together. When full, the oldest segment is dropped (counted, logged). */
  readonly maxBytes: number;
  readonly segmentBytes: number;
  readonly log: Logger;
  readonly stats: Stats;
}

interface Segment {
  readonly file: string;
  readonly firstSeq: number;
  lastSeq: number;
  bytes: number;
  /** Never appended to again (it may end in a fragment of a failed write). */
  sealed?: boolean;
}

type Handle = Awaited<ReturnType<typeof open>>;

const SEGMENT_RE = /^(\d{20})\.jsonl$/;

/**
 * Append-only, fsync'd log of change records in numbered segments. Every record gets a sequence
 * number; each sink keeps its own cursor (the last seq it delivered) beside the segments.
 */
export class Spool {
  private readonly segmentsDir: string;
  private readonly cursorsDir: string;
  private readonly o: SpoolOptions;
  private readonly segments: Segment[];
  private active: Handle | null = null;
  private seq: number;
  private writing: Promise<unknown> = Promise.resolve();
  private readonly waiters = new Set<() => void>();

  private constructor(dir: string, o: SpoolOptions, segments: Segment[], lastSeq: number) {
    this.segmentsDir = join(dir, 'segments');
    this.cursorsDir = join(dir, 'cursors');
    this.o = o;
    this.segments = segments;
    this.seq = lastSeq;
  }

  static async open(dir: string, o: SpoolOptions): Promise<Spool> {
    const segmentsDir = join(dir, 'segments');
    await mkdir(segmentsDir, { recursive: true });
    await mkdir(join(dir, 'cursors'), { recursive: true });
    const names = (await readdir(segmentsDir)).filter((n) => SEGMENT_RE.test(n)).sort();
    const segments: Segment[] = [];
    for (const [i, name] of names.entries()) {
      const file = join(segmentsDir, name);
      const firstSeq = Number(SEGMENT_RE.exec(name)![1]);
      const isLast = i === names.length - 1;
      const { lastSeq, bytes } = await scanSegment(file, firstSeq, isLast, o.log);
      segments.push({ file, firstSeq, lastSeq, bytes });
    }
    const lastSeq = segments.at(-1)?.lastSeq ?? 0;
    return new Spool(dir, o, segments, lastSeq);
  }

  get lastSeq(): number {
    return this.seq;
  }

  get bytes(): number {
    return this.segments.reduce((n, s) => n + s.bytes, 0);
  }

  get segmentCount(): number {
    return this.segments.length;
  }

  /** Resolves once the records are on disk (fsync'd). Appends are serialized. */
  append(records: readonly ScheduledEventRecord[]): Promise<void> {
    const run = this.writing.then(() => this.appendNow(records));
    this.writing = run.catch(() => undefined);
    return run;
  }

  private async appendNow(records: readonly ScheduledEventRecord[]): Promise<void> {
    if (records.length === 0) return;
    const first = this.seq + 1;
    const data = Buffer.from(
      records.map((record, i) => `${JSON.stringify({ seq: first + i, record })}\n`).join(''),
    );
    let seg = this.segments.at(-1);
    const full = !!seg && seg.bytes > 0 && seg.bytes + data.length > this.o.segmentBytes;
    if (!seg || !this.active || full) seg = await this.roll(first, full ? undefined : seg);
    this.dropOldestToFit(data.length);
    const fh = this.active!;
    try {
      await fh.appendFile(data);
      await fh.sync();
    } catch (err) {
      // Leave no half-written batch behind: the caller retries the whole batch. If even that
      // fails, the next append starts a new segment and the fragment reads as one skipped line.
      try {
        await fh.truncate(seg.bytes);
      } catch {
        await fh.close().catch(() => undefined);
        this.active = null;
        seg.sealed = true;
      }
      throw err;
    }
    seg.bytes += data.length;
    seg.lastSeq = first + records.length - 1;
    this.seq = seg.lastSeq;
    this.o.stats.add('spool.appended', records.length);
    for (const wake of this.waiters) wake();
    this.waiters.clear();
  }

  /** Opens the segment to append to: `reopen` (the newest, after a restart) when given, else a new one. */
  private async roll(firstSeq: number, reopen: Segment | undefined): Promise<Segment> {
    await this.active?.close();
    this.active = null;
    const current = reopen;
    if (
      current &&
      !current.sealed &&
      current.bytes < this.o.segmentBytes &&
      current.lastSeq === firstSeq - 1
    ) {
      this.active = await open(current.file, 'a');
      return current;
    }
    const file = join(this.segmentsDir, `${String(firstSeq).padStart(20, '0')}.jsonl`);
    this.active = await open(file, 'a', 0o600);
    await fsyncDir(this.segmentsDir);
    const seg: Segment = { file, firstSeq, lastSeq: firstSeq - 1, bytes: 0 };
    this.segments.push(seg);
    return seg;
  }

  /** Set by the dispatcher: the lowest seq every sink has delivered (durably recorded). */
  minDeliveredSeq: () => number = () => 0;

  private dropOldestToFit(incoming: number): void {
    while (this.segments.length > 1 && this.bytes + incoming > this.o.maxBytes) {
      const oldest = this.segments.shift()!;
      rm(oldest.file, { force: true }).catch(() => undefined);
      // Records every sink already delivered are no loss: compaction just had not run yet.
      const lost = Math.max(0, oldest.lastSeq - Math.max(oldest.firstSeq - 1, this.minDeliveredSeq()));
      if (lost === 0) continue;
      this.o.stats.add('spool.droppedRecords', lost);
      this.o.log.error(
        {
          segment: oldest.file,
          records: lost,
          fromSeq: oldest.firstSeq,
          toSeq: oldest.lastSeq,
          maxBytes: this.o.maxBytes,
        },
        'spool full: dropped the oldest segment before every sink had delivered it (raise spool.maxBytes or fix the failing sink)',
      );
    }
  }

  /** Records with seq > afterSeq, in order, at most `max`. */
  async read(afterSeq: number, max: number): Promise<SpooledRecord[]> {
    const out: SpooledRecord[] = [];
    // A snapshot: compaction or an overflow drop may shift the live list while a file is read.
    for (const seg of this.segments.slice()) {
      if (seg.lastSeq <= afterSeq || out.length >= max) continue;
      let text: string;
      try {
        text = await readFile(seg.file, 'utf8');
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue; // dropped or compacted meanwhile
        throw err;
      }
      for (const line of text.split('\n')) {
        if (out.length >= max) break;
        const entry = parseLine(line);
        if (entry && entry.seq > afterSeq && entry.seq <= seg.lastSeq) out.push(entry);
      }
    }
    return out;
  }

  /** Resolves when a record with seq > afterSeq exists, or when `signal` aborts. */
  waitForAppend(afterSeq: number, signal: AbortSignal): Promise<void> {
    if (this.seq > afterSeq || signal.aborted) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const wake = () => {
        this.waiters.delete(wake);
        signal.removeEventListener('abort', wake);
        resolve();
      };
      this.waiters.add(wake);
      signal.addEventListener('abort', wake, { once: true });
    });
  }

  async loadCursor(sink: string): Promise<number> {
    let cursor: number;
    try {
      cursor = Number(JSON.parse(await readFile(this.cursorPath(sink), 'utf8')).seq) || 0;
    } catch {
      cursor = 0; // no cursor yet: a new sink starts at the oldest record still spooled
    }
    if (cursor > this.seq) {
      this.o.log.warn({ sink, cursor, lastSeq: this.seq }, 'sink cursor is ahead of the spool; resetting it');
      cursor = this.seq;
    }
    return cursor;
  }

  async saveCursor(sink: string, seq: number): Promise<void> {
    await writeFileAtomic(this.cursorPath(sink), `${JSON.stringify({ seq })}\n`);
  }

  private cursorPath(sink: string): string {
    return join(this.cursorsDir, `${encodeURIComponent(sink)}.json`);
  }

  /** Deletes segments every sink has passed; the newest segment always stays (it carries the seq). */
  async compact(minCursor: number): Promise<number> {
    let removed = 0;
    while (this.segments.length > 1 && this.segments[0]!.lastSeq <= minCursor) {
      const seg = this.segments.shift()!;
      await rm(seg.file, { force: true });
      removed++;
    }
    if (removed > 0) await fsyncDir(this.segmentsDir);
    return removed;
  }

  async close(): Promise<void> {
    await this.writing;
    const fh = this.active;
    this.active = null;
    await fh?.close();
    for (const wake of this.waiters) wake();
  }
}

function parseLine(line: string): SpooledRecord | null {
  if (line === '') return null;
  try {
    const v = JSON.parse(line) as SpooledRecord;
    return typeof v.seq === 'number' && v.record && typeof v.record === 'object' ? v : null;
  } catch {
    return null;
  }
}

/** Finds the last good record; a torn tail of the newest segment (crash mid-append) is cut off. */
async function scanSegment(
  file: string,
  firstSeq: number,
  isLast: boolean,
  log: Logger,
): Promise<{ lastSeq: number; bytes: number }> {
  const buf = await readFile(file);
  let end = buf.length;
  if (end > 0 && buf[end - 1] !== 0x0a) end = buf.lastIndexOf(0x0a) + 1;
  let lastSeq = firstSeq - 1;
  let bad = 0;
  for (const line of buf.subarray(0, end).toString('utf8').split('\n')) {
    if (line === '') continue;
    const entry = parseLine(line);
    if (entry) lastSeq = Math.max(lastSeq, entry.seq);
    else bad++;
  }
  if (bad > 0)
    log.warn({ segment: file, unreadableLines: bad }, 'spool segment has unreadable lines; they are skipped');
  if (end !== buf.length && isLast) {
    const fh = await open(file, 'r+');
    await fh.truncate(end);
    await fh.sync();
    await fh.close();
    log.warn(
      { segment: file, droppedBytes: buf.length - end },
      'spool: cut a partial record left by a crash (it was never acknowledged)',
    );
  }
  return { lastSeq, bytes: end };
}
