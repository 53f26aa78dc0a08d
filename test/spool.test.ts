import { appendFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Spool } from '../src/sinks/spool.ts';
import { Stats } from '../src/stats.ts';
import { useTempDirs } from './helpers/fs.ts';
import { captureLogs } from './helpers/logs.ts';
import { sampleRecord } from './helpers/records.ts';

const tempDir = useTempDirs();

async function open(dir: string, over: { maxBytes?: number; segmentBytes?: number } = {}) {
  const logs = captureLogs();
  const stats = new Stats();
  const spool = await Spool.open(dir, {
    maxBytes: 1024 * 1024,
    segmentBytes: 8 * 1024,
    log: logs.log,
    stats,
    ...over,
  });
  return { spool, logs, stats };
}

const ids = (entries: { record: { EventId: string } }[]) =>
  entries.map((e) => Number(e.record.EventId.slice(-12)));

describe('Spool', () => {
  it('appends in order across segments and reads back by sequence', async () => {
    const dir = await tempDir();
    const { spool } = await open(dir, { segmentBytes: 4096 });
    for (let i = 1; i <= 30; i++) await spool.append([sampleRecord(i)]);
    expect(spool.lastSeq).toBe(30);
    expect(spool.segmentCount).toBeGreaterThan(3);
    expect(ids(await spool.read(0, 100))).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
    expect((await spool.read(25, 3)).map((e) => e.seq)).toEqual([26, 27, 28]);
    await spool.close();
  });

  it('keeps everything across a reopen, and continues the sequence', async () => {
    const dir = await tempDir();
    const a = await open(dir);
    await a.spool.append([sampleRecord(1), sampleRecord(2)]);
    await a.spool.close();
    const b = await open(dir);
    expect(b.spool.lastSeq).toBe(2);
    await b.spool.append([sampleRecord(3)]);
    expect(ids(await b.spool.read(0, 10))).toEqual([1, 2, 3]);
    await b.spool.close();
  });

  it('cuts a torn last record left by a crash and carries on', async () => {
    const dir = await tempDir();
    const a = await open(dir);
    await a.spool.append([sampleRecord(1)]);
    await a.spool.close();
    const [seg] = await readdir(join(dir, 'segments'));
    await appendFile(join(dir, 'segments', seg!), '{"seq":2,"record":{"TimeGen');
    const b = await open(dir);
    expect(b.spool.lastSeq).toBe(1);
    expect(b.logs.messages('warn')).toEqual([expect.stringMatching(/partial record/)]);
    await b.spool.append([sampleRecord(2)]);
    expect(ids(await b.spool.read(0, 10))).toEqual([1, 2]);
    await b.spool.close();
  });

  it('stores cursors durably and never lets one run ahead of the spool', async () => {
    const dir = await tempDir();
    const { spool } = await open(dir);
    await spool.append([sampleRecord(1), sampleRecord(2)]);
    expect(await spool.loadCursor('file')).toBe(0);
    await spool.saveCursor('file', 2);
    expect(await spool.loadCursor('file')).toBe(2);
    await spool.saveCursor('other', 50);
    expect(await spool.loadCursor('other')).toBe(2);
    await spool.close();
  });

  it('compacts only segments every cursor has passed, keeping the newest', async () => {
    const dir = await tempDir();
    const { spool } = await open(dir, { segmentBytes: 4096 });
    for (let i = 1; i <= 30; i++) await spool.append([sampleRecord(i)]);
    const before = spool.segmentCount;
    expect(await spool.compact(0)).toBe(0);
    const removed = await spool.compact(15);
    expect(removed).toBeGreaterThan(0);
    expect(spool.segmentCount).toBe(before - removed);
    const rest = await spool.read(15, 100);
    expect(rest.map((e) => e.seq)).toEqual(Array.from({ length: 15 }, (_, i) => i + 16));
    await spool.compact(30);
    expect(spool.segmentCount).toBe(1);
    await spool.close();
    // The sequence survives even when only the newest segment is left.
    const again = await open(dir, { segmentBytes: 4096 });
    expect(again.spool.lastSeq).toBe(30);
    await again.spool.close();
  });

  it('when full, drops the oldest segment, counts and logs the loss', async () => {
    const dir = await tempDir();
    const { spool, stats, logs } = await open(dir, { segmentBytes: 4096, maxBytes: 12 * 1024 });
    for (let i = 1; i <= 40; i++) await spool.append([sampleRecord(i)]);
    expect(spool.bytes).toBeLessThanOrEqual(12 * 1024);
    const dropped = stats.get('spool.droppedRecords');
    expect(dropped).toBeGreaterThan(0);
    const left = await spool.read(0, 100);
    expect(left[0]!.seq).toBe(dropped + 1);
    expect(left.at(-1)!.seq).toBe(40);
    expect(logs.messages('error')[0]).toMatch(/spool full/);
    await spool.close();
  });

  it('a read that overlaps a compaction returns a contiguous run (no segment skipped)', async () => {
    const dir = await tempDir();
    const { spool } = await open(dir, { segmentBytes: 4096 });
    for (let i = 1; i <= 100; i++) await spool.append([sampleRecord(i)]);
    const firstSegmentLast = (await spool.read(0, 100)).find(
      (e, i, all) => all[i + 1] && all[i + 1]!.seq !== e.seq + 1,
    )?.seq;
    expect(firstSegmentLast).toBeUndefined(); // sanity: the spool itself is contiguous
    for (let k = 0; k < 20; k++) {
      const reading = spool.read(k * 3, 30);
      const compacting = spool.compact(k * 3);
      const [entries] = await Promise.all([reading, compacting]);
      const seqs = entries.map((e) => e.seq);
      expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => k * 3 + 1 + i));
    }
    await spool.close();
  });

  it('does not count records every sink already delivered as dropped when full', async () => {
    const dir = await tempDir();
    const { spool, stats, logs } = await open(dir, { segmentBytes: 4096, maxBytes: 12 * 1024 });
    spool.minDeliveredSeq = () => spool.lastSeq;
    for (let i = 1; i <= 40; i++) await spool.append([sampleRecord(i)]);
    expect(stats.get('spool.droppedRecords')).toBe(0);
    expect(logs.messages('error')).toEqual([]);
    await spool.close();
  });

  it('wakes a waiting reader on append', async () => {
    const dir = await tempDir();
    const { spool } = await open(dir);
    const ac = new AbortController();
    const waiting = spool.waitForAppend(0, ac.signal);
    await spool.append([sampleRecord(1)]);
    await waiting;
    expect(spool.lastSeq).toBe(1);
    await spool.close();
  });
});
