import { type ChildProcess, spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadScenario, stepToOperation } from '../src/simulator/scenario.ts';
import { ImdsSimulator } from '../src/simulator/server.ts';
import type { ChangeKind } from '../src/sources/diff.ts';
import { recordId } from '../src/transform/record.ts';
import { eventually, useTempDirs } from './helpers/fs.ts';

const tempDir = useTempDirs();

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Complete lines only: a line being written when the agent was killed is not a record yet. */
async function completeRecords(
  path: string,
): Promise<{ RecordId: string; EventId: string; Change: string }[]> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch {
    return [];
  }
  const end = text.lastIndexOf('\n');
  return text
    .slice(0, end + 1)
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

/** What each scenario operation must produce for its EventId. */
function changesOf(op: string): ChangeKind[] {
  switch (op) {
    case 'schedule':
      return ['appeared'];
    case 'appear-started':
      return ['appeared', 'started'];
    case 'start':
      return ['started'];
    case 'remove':
      return ['removed'];
    default:
      return [];
  }
}

const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
});

describe('kill -9 at random moments, then restart', () => {
  it('the sink output holds every expected RecordId and nothing else', async () => {
    const seed = Number(process.env.CRASH_SEED ?? Date.now() % 1_000_000);
    const random = mulberry32(seed);
    const scenario = await loadScenario('tour');
    const sim = new ImdsSimulator({ compute: scenario.compute, maxRequestsPerSecond: 100_000 });
    await sim.start();
    const dir = await tempDir();
    const out = join(dir, 'out', 'records.jsonl');
    const env = {
      ...process.env,
      SEF_IMDS_BASE_URL: sim.url,
      SEF_STATE_DIR: join(dir, 'state'),
      SEF_SINKS: JSON.stringify([{ type: 'file', path: out, maxBatchRecords: 2 }]),
      SEF_POLL_INTERVAL_MS: '25',
      SEF_IMDS_REQUEST_TIMEOUT_MS: '20',
      SEF_IMDS_FIRST_REQUEST_TIMEOUT_MS: '3000',
      SEF_IMDS_MIN_REQUEST_SPACING_MS: '0',
      SEF_IMDS_MAX_BACKOFF_MS: '50',
      SEF_LOG_LEVEL: 'error',
      SEF_STATS_INTERVAL_MS: '0',
    };
    let child: ChildProcess | null = null;
    let kills = 0;
    const startAgent = () => {
      child = spawn(process.execPath, ['src/cli.ts', 'run'], { env, stdio: ['ignore', 'ignore', 'inherit'] });
      children.push(child);
    };
    // The killer: SIGKILL after a random 150-1250 ms of life (some during boot, some while idle),
    // or a few ms after a step is applied (mid-poll, mid-spool, mid-sink-write); restart at once.
    let killing = true;
    const killer = (async () => {
      while (killing) {
        startAgent();
        const victim = child! as ChildProcess;
        const gone = new Promise((r) => victim.once('exit', r));
        await Promise.race([gone, new Promise((r) => setTimeout(r, 150 + random() * 1100))]);
        if (!killing) break;
        victim.kill('SIGKILL');
        await gone;
        kills++;
      }
    })();
    const killSoon = () => {
      const victim = child;
      setTimeout(() => victim?.kill('SIGKILL'), random() * 40);
    };

    const vmId = String(sim.compute.vmId);
    const expected = new Set<string>();
    try {
      for (const step of scenario.steps) {
        sim.apply(stepToOperation(step));
        if (random() < 0.6) killSoon();
        const eventId =
          'eventId' in step ? step.eventId : (step as { event: { EventId: string } }).event.EventId;
        const ids = changesOf(step.op).map((c) => recordId(vmId, eventId, c, 0));
        for (const id of ids) expected.add(id);
        await eventually(
          async () => {
            const have = new Set((await completeRecords(out)).map((r) => r.RecordId));
            return ids.every((id) => have.has(id));
          },
          `records of step "${step.op}" at t=${step.at} (seed ${seed})`,
          60_000,
        );
        // Let at least one more kill land before the next step, so every step lives through one.
        const k = kills;
        await eventually(() => kills > k, 'another kill', 10_000);
      }
    } finally {
      killing = false;
      await killer;
    }
    // A last, graceful run: the torn tail (if any) is cut, and everything spooled is delivered.
    const last = child! as ChildProcess;
    const closed = new Promise<number | null>((r) => last.once('exit', (code) => r(code)));
    await sim.waitForServed(3);
    last.kill('SIGTERM');
    expect(await closed).toBe(0);
    const restart = spawn(process.execPath, ['src/cli.ts', 'run'], {
      env,
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    children.push(restart);
    await sim.waitForServed(3);
    const closed2 = new Promise<number | null>((r) => restart.once('exit', (code) => r(code)));
    restart.kill('SIGTERM');
    expect(await closed2).toBe(0);
    await sim.stop();

    const text = await readFile(out, 'utf8');
    expect(text.endsWith('\n')).toBe(true);
    const records = text
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { RecordId: string });
    expect(new Set(records.map((r) => r.RecordId)), `seed ${seed}, ${kills} kills`).toEqual(expected);
    expect(expected.size).toBe(scenario.expect.length);
    expect(kills).toBeGreaterThanOrEqual(scenario.steps.length);
    console.log(
      `crash test: seed ${seed}, ${kills} kills, ${records.length} lines for ${expected.size} RecordIds`,
    );
  }, 240_000);
});
