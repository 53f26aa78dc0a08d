import { rm } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { type Clock, systemClock } from '../src/clock.ts';
import { DeadLetterFile } from '../src/sinks/dead-letter.ts';
import { Dispatcher } from '../src/sinks/dispatcher.ts';
import { SinkWorker } from '../src/sinks/sink-worker.ts';
import { Spool } from '../src/sinks/spool.ts';
import { failed, ok, retryable, type SendResult, type Sink } from '../src/sinks/types.ts';
import { Stats } from '../src/stats.ts';
import type { ScheduledEventRecord } from '../src/transform/record.ts';
import { RecordingClock } from './helpers/clock.ts';
import { eventually, readJsonLines, useTempDirs } from './helpers/fs.ts';
import { captureLogs } from './helpers/logs.ts';
import { sampleRecord } from './helpers/records.ts';

const tempDir = useTempDirs();
const openSpools: Spool[] = [];
afterEach(async () => {
  await Promise.all(openSpools.splice(0).map((s) => s.close()));
});

/** A sink whose answers the test scripts; it keeps what it accepted. */
class ScriptedSink implements Sink {
  readonly accepted: ScheduledEventRecord[] = [];
  closed = 0;
  private calls = 0;
  private readonly answer: (
    batch: readonly ScheduledEventRecord[],
    call: number,
  ) => Promise<SendResult> | SendResult;
  constructor(
    answer: (batch: readonly ScheduledEventRecord[], call: number) => Promise<SendResult> | SendResult,
  ) {
    this.answer = answer;
  }
  async send(batch: readonly ScheduledEventRecord[]): Promise<SendResult> {
    const r = await this.answer(batch, this.calls++);
    if (r.kind === 'ok') this.accepted.push(...batch);
    return r;
  }
  async close(): Promise<void> {
    this.closed++;
  }
}

async function rig(
  sinks: Record<string, Sink>,
  opts: {
    clock?: Clock;
    maxBatchRecords?: number;
    maxInFlightBatches?: number;
    dir?: string;
    retry?: { initialDelayMs: number; maxDelayMs: number };
  } = {},
) {
  const dir = opts.dir ?? (await tempDir());
  const logs = captureLogs();
  const stats = new Stats();
  const spool = await Spool.open(`${dir}/spool`, {
    maxBytes: 1 << 20,
    segmentBytes: 64 << 10,
    log: logs.log,
    stats,
  });
  openSpools.push(spool);
  const deadLetter = new DeadLetterFile(dir);
  const clock = opts.clock ?? systemClock;
  const workers = Object.entries(sinks).map(
    ([name, sink]) =>
      new SinkWorker(
        {
          name,
          sink,
          maxBatchRecords: opts.maxBatchRecords ?? 10,
          maxInFlightBatches: opts.maxInFlightBatches ?? 1,
          retry: opts.retry ?? { initialDelayMs: 10, maxDelayMs: 40 },
        },
        { spool, deadLetter, clock, log: logs.log, stats, random: () => 1 },
      ),
  );
  const dispatcher = new Dispatcher(spool, workers, logs.log);
  await dispatcher.start();
  return { dir, spool, stats, logs, workers, dispatcher, deadLetter };
}

const rec = (n: number) => Array.from({ length: n }, (_, i) => sampleRecord(i + 1));

describe('dispatcher', () => {
  it('delivers every record in order and advances the cursor', async () => {
    const sink = new ScriptedSink(() => ok);
    const r = await rig({ s: sink }, { maxBatchRecords: 3 });
    await r.spool.append(rec(10));
    await eventually(() => sink.accepted.length === 10, 'delivery');
    expect(sink.accepted.map((x) => x.EventId)).toEqual(rec(10).map((x) => x.EventId));
    expect(await r.dispatcher.drain(Date.now() + 1000)).toBe(true);
    expect(await r.spool.loadCursor('s')).toBe(10);
  });

  it('retries retryable answers with capped backoff, honouring Retry-After', async () => {
    const clock = new RecordingClock();
    const sink = new ScriptedSink((_b, call) =>
      call === 0 ? retryable('429', 5000) : call < 5 ? retryable('503') : ok,
    );
    const r = await rig({ s: sink }, { clock, retry: { initialDelayMs: 10, maxDelayMs: 40_000 } });
    await r.spool.append(rec(1));
    await eventually(() => sink.accepted.length === 1, 'delivery after retries');
    // Retry-After first, then 20, 40, 80, 160 from the backoff policy (random = 1).
    expect(clock.sleeps).toEqual([5000, 20, 40, 80, 160]);
    expect(r.stats.get('sink.s.retries')).toBe(5);
    await r.dispatcher.drain(clock.now() + 1000);
  });

  it("caps backoff and Retry-After at the sink's maxDelayMs", async () => {
    const clock = new RecordingClock();
    const sink = new ScriptedSink((_b, call) =>
      call === 0 ? retryable('429', 3_600_000) : call < 4 ? retryable('503') : ok,
    );
    const r = await rig({ s: sink }, { clock });
    await r.spool.append(rec(1));
    await eventually(() => sink.accepted.length === 1, 'delivery after retries');
    expect(clock.sleeps).toEqual([40, 20, 40, 40]);
    await r.dispatcher.drain(clock.now() + 1000);
  });

  it('treats a thrown error as retryable, never as lost', async () => {
    const sink = new ScriptedSink((_b, call) => {
      if (call < 2) throw new Error('socket hang up');
      return ok;
    });
    const r = await rig({ s: sink });
    await r.spool.append(rec(2));
    await eventually(() => sink.accepted.length === 2, 'delivery after throws');
    await r.dispatcher.drain(Date.now() + 1000);
  });

  it('dead-letters a failed batch with its reason, counts it, and moves on', async () => {
    const sink = new ScriptedSink((b) =>
      b.some((x) => x.EventId.endsWith('2')) ? failed('400 InvalidStream') : ok,
    );
    const r = await rig({ s: sink }, { maxBatchRecords: 1 });
    await r.spool.append(rec(3));
    await eventually(() => sink.accepted.length === 2, 'the good records');
    await r.dispatcher.drain(Date.now() + 1000);
    const dead = await readJsonLines<{
      reason: string;
      sink: string;
      record: ScheduledEventRecord;
      seq: number;
    }>(r.deadLetter.pathFor('s'));
    expect(dead).toHaveLength(1);
    expect(dead[0]).toMatchObject({ sink: 's', reason: '400 InvalidStream', seq: 2 });
    expect(r.stats.get('sink.s.deadLettered')).toBe(1);
    expect(await r.spool.loadCursor('s')).toBe(3);
    expect(r.logs.messages('error')).toEqual([expect.stringMatching(/dead-letter/)]);
  });

  it('a stuck sink does not hold up another', async () => {
    let release!: () => void;
    const stuck = new ScriptedSink(() => new Promise<SendResult>((r) => (release = () => r(ok))));
    const fast = new ScriptedSink(() => ok);
    const r = await rig({ stuck, fast });
    await r.spool.append(rec(5));
    await eventually(() => fast.accepted.length === 5, 'the fast sink');
    expect(stuck.accepted).toHaveLength(0);
    release();
    await eventually(() => stuck.accepted.length > 0, 'the stuck sink after release');
    await r.dispatcher.drain(Date.now() + 2000);
  });

  it('with several batches in flight, the cursor only passes a contiguous run of finished batches', async () => {
    const gates: (() => void)[] = [];
    const sink = new ScriptedSink(() => new Promise<SendResult>((r) => gates.push(() => r(ok))));
    const r = await rig({ s: sink }, { maxBatchRecords: 1, maxInFlightBatches: 3 });
    await r.spool.append(rec(3));
    await eventually(() => gates.length === 3, 'three batches in flight');
    gates[2]!();
    gates[1]!();
    await new Promise((res) => setTimeout(res, 30));
    expect(r.workers[0]!.deliveredSeq).toBe(0);
    gates[0]!();
    await eventually(() => r.workers[0]!.deliveredSeq === 3, 'the cursor after the first batch');
    await r.dispatcher.drain(Date.now() + 1000);
  });

  it('at the shutdown deadline, undelivered records stay spooled and go out on the next start', async () => {
    const down = new ScriptedSink(() => retryable('503'));
    const first = await rig({ s: down });
    await first.spool.append(rec(4));
    expect(await first.dispatcher.drain(Date.now() + 150)).toBe(false);
    expect(await first.spool.loadCursor('s')).toBe(0);
    await first.spool.close();

    const up = new ScriptedSink(() => ok);
    const second = await rig({ s: up }, { dir: first.dir });
    await eventually(() => up.accepted.length === 4, 'redelivery after restart');
    expect(await second.dispatcher.drain(Date.now() + 1000)).toBe(true);
  });

  it('a spool read error is reported and retried, not fatal', async () => {
    const sink = new ScriptedSink(() => ok);
    const r = await rig({ s: sink });
    await r.spool.append(rec(2));
    await eventually(() => sink.accepted.length === 2, 'the first records');
    const { readdir, rename, mkdir } = await import('node:fs/promises');
    const segDir = `${r.dir}/spool/segments`;
    const [seg] = await readdir(segDir);
    await rename(`${segDir}/${seg}`, `${segDir}/${seg}.aside`);
    await mkdir(`${segDir}/${seg}`); // the segment path is now a directory: EISDIR on read
    await r.spool.append(rec(3).slice(2)).catch(() => undefined);
    await eventually(
      () => r.logs.messages('warn').some((m) => m.includes('reading the spool')),
      'the read failure',
    );
    await rm(`${segDir}/${seg}`, { recursive: true });
    await rename(`${segDir}/${seg}.aside`, `${segDir}/${seg}`);
    await eventually(
      () => sink.accepted.length === 3,
      'delivery after the segment is readable again',
      10_000,
    );
    await r.dispatcher.drain(Date.now() + 1000);
  });

  it('the shutdown deadline also bounds a send that never returns', async () => {
    const hung = new ScriptedSink(() => new Promise<SendResult>(() => undefined));
    const r = await rig({ s: hung });
    await r.spool.append(rec(1));
    await eventually(
      () => (r.workers[0] as unknown as { queue: { pending: number } }).queue.pending === 1,
      'the send under way',
    );
    expect(await r.dispatcher.drain(Date.now() + 200)).toBe(false);
    expect(await r.spool.loadCursor('s')).toBe(0);
  });

  it('leaves no abort listeners behind while batches flow', async () => {
    const { EventEmitter } = await import('node:events');
    const sink = new ScriptedSink(() => ok);
    const r = await rig({ s: sink }, { maxBatchRecords: 1 });
    for (const x of rec(50)) await r.spool.append([x]);
    await eventually(() => sink.accepted.length === 50, 'delivery');
    const signal = (r.workers[0] as unknown as { stopReading: AbortController }).stopReading.signal;
    expect(EventEmitter.getEventListeners(signal, 'abort').length).toBeLessThanOrEqual(2);
    await r.dispatcher.drain(Date.now() + 1000);
  });

  it('reports records a full spool dropped before this sink delivered them', async () => {
    const dir = await tempDir();
    const logs = captureLogs();
    const stats = new Stats();
    const spool = await Spool.open(`${dir}/spool`, {
      maxBytes: 12 << 10,
      segmentBytes: 4 << 10,
      log: logs.log,
      stats,
    });
    openSpools.push(spool);
    for (const r of rec(40)) await spool.append([r]);
    const sink = new ScriptedSink(() => ok);
    const w = new SinkWorker(
      {
        name: 's',
        sink,
        maxBatchRecords: 100,
        maxInFlightBatches: 1,
        retry: { initialDelayMs: 10, maxDelayMs: 40 },
      },
      { spool, deadLetter: new DeadLetterFile(dir), clock: systemClock, log: logs.log, stats },
    );
    await w.start();
    await eventually(() => w.deliveredSeq === 40, 'delivery of what is left');
    expect(stats.get('sink.s.lostToSpoolOverflow')).toBe(stats.get('spool.droppedRecords'));
    await w.drain(Date.now() + 1000);
  });
});
