import { appendFile, readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FileSink } from '../src/sinks/file/file-sink.ts';
import { readJsonLines, useTempDirs } from './helpers/fs.ts';
import { captureLogs } from './helpers/logs.ts';
import { sampleRecord } from './helpers/records.ts';

const tempDir = useTempDirs();

describe('file sink', () => {
  it('writes one JSON object per line', async () => {
    const path = join(await tempDir(), 'out', 'r.jsonl');
    const sink = await FileSink.open({ path, rotateBytes: 1 << 20, keepFiles: 2, log: captureLogs().log });
    expect(await sink.send([sampleRecord(1), sampleRecord(2)])).toEqual({ kind: 'ok' });
    await sink.close();
    await sink.close();
    expect((await readJsonLines(path)).map((r) => r.EventId)).toEqual([
      sampleRecord(1).EventId,
      sampleRecord(2).EventId,
    ]);
  });

  it('rotates by size and keeps keepFiles old files', async () => {
    const dir = await tempDir();
    const path = join(dir, 'r.jsonl');
    const sink = await FileSink.open({ path, rotateBytes: 2048, keepFiles: 2, log: captureLogs().log });
    for (let i = 1; i <= 12; i++) await sink.send([sampleRecord(i)]);
    await sink.close();
    const files = (await readdir(dir)).sort();
    expect(files).toEqual(['r.jsonl', 'r.jsonl.1', 'r.jsonl.2']);
    const newest = await readJsonLines(path);
    expect(newest.at(-1)!.EventId).toBe(sampleRecord(12).EventId);
    const older = await readJsonLines(`${path}.1`);
    expect(Number(String(older.at(-1)!.EventId).slice(-12)) + 1).toBe(
      Number(String(newest[0]!.EventId).slice(-12)),
    );
  });

  it('recovers after a failed rotation instead of refusing every later batch', async () => {
    const dir = await tempDir();
    const path = join(dir, 'out', 'r.jsonl');
    const sink = await FileSink.open({ path, rotateBytes: 2048, keepFiles: 2, log: captureLogs().log });
    for (let i = 1; i <= 3; i++) expect((await sink.send([sampleRecord(i)])).kind).toBe('ok');
    await rm(join(dir, 'out'), { recursive: true });
    const results = [];
    for (let i = 4; i <= 8; i++) results.push((await sink.send([sampleRecord(i)])).kind);
    expect(results).not.toContain('failed');
    expect(results.at(-1)).toBe('ok');
    await sink.close();
  });

  it('serializes concurrent batches, rotation included: every record once, in order', async () => {
    const dir = await tempDir();
    const path = join(dir, 'r.jsonl');
    const sink = await FileSink.open({ path, rotateBytes: 2048, keepFiles: 10, log: captureLogs().log });
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => sink.send([sampleRecord(i + 1)])));
    expect(results.every((r) => r.kind === 'ok')).toBe(true);
    await sink.close();
    // Oldest first: r.jsonl.N … r.jsonl.1, then r.jsonl.
    const rank = (f: string) => (f === 'r.jsonl' ? 0 : Number(f.split('.').at(-1)));
    const files = (await readdir(dir)).sort((a, b) => rank(b) - rank(a));
    const all = [];
    for (const f of files) all.push(...(await readJsonLines(join(dir, f))));
    expect(all.map((r) => r.EventId)).toEqual(
      Array.from({ length: 12 }, (_, i) => sampleRecord(i + 1).EventId),
    );
  });

  it('refuses batches after close, and close twice is safe', async () => {
    const path = join(await tempDir(), 'r.jsonl');
    const sink = await FileSink.open({ path, rotateBytes: 1 << 20, keepFiles: 1, log: captureLogs().log });
    await sink.close();
    await sink.close();
    expect((await sink.send([sampleRecord(1)])).kind).toBe('failed');
  });

  it('cuts a partial last line left by a crash', async () => {
    const path = join(await tempDir(), 'r.jsonl');
    const a = await FileSink.open({ path, rotateBytes: 1 << 20, keepFiles: 1, log: captureLogs().log });
    await a.send([sampleRecord(1)]);
    await a.close();
    await appendFile(path, '{"TimeGenerated":"2026-');
    const logs = captureLogs();
    const b = await FileSink.open({ path, rotateBytes: 1 << 20, keepFiles: 1, log: logs.log });
    await b.send([sampleRecord(2)]);
    await b.close();
    expect((await readFile(path, 'utf8')).split('\n').filter(Boolean)).toHaveLength(2);
    expect(logs.messages('warn')).toEqual([expect.stringMatching(/partial last line/)]);
  });
});
