import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../src/log.ts';
import { type Fault, ImdsSimulator } from '../src/simulator/server.ts';
import type { EventChange } from '../src/sources/diff.ts';
import { ImdsClient } from '../src/sources/imds/client.ts';
import { ScheduledEventsSource } from '../src/sources/scheduled-events-source.ts';
import { WatchStateStore } from '../src/sources/state-store.ts';
import { Stats } from '../src/stats.ts';
import { fastAgent } from './helpers/agent.ts';
import { RecordingClock } from './helpers/clock.ts';
import { eventually, useTempDirs } from './helpers/fs.ts';
import { captureLogs } from './helpers/logs.ts';

const tempDir = useTempDirs();
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function simulator(): Promise<ImdsSimulator> {
  const sim = new ImdsSimulator({ maxRequestsPerSecond: 100_000 });
  await sim.start();
  cleanups.push(() => sim.stop());
  return sim;
}

const FAULTS: Fault[] = [
  { kind: 'status', status: 400 },
  { kind: 'status', status: 404 },
  { kind: 'status', status: 405 },
  { kind: 'status', status: 410 },
  { kind: 'status', status: 429, retryAfter: '0' },
  { kind: 'status', status: 500 },
  { kind: 'status', status: 502 },
  { kind: 'status', status: 503 },
  { kind: 'reset' },
  { kind: 'hang', ms: 150 },
  { kind: 'non-json' },
  { kind: 'invalid-schema' },
];

describe('the poll loop under IMDS faults (real agent, simulator on loopback)', () => {
  it('survives every fault and never produces a false change', async () => {
    const sim = await simulator();
    const ev = sim.board.schedule({ EventType: 'Reboot' }, Date.now() + 900_000, sim.vmName);
    const { agent, records } = fastAgent(sim, await tempDir());
    await agent.start();
    cleanups.push(() => agent.stop());
    await eventually(async () => (await records()).length === 1, 'the appeared record');

    for (const fault of FAULTS) {
      sim.injectFault({ ...fault, count: 3 });
      await sim.waitForServed(2); // the faults were played, then two good documents were processed
    }
    expect((await records()).map((r) => r.Change)).toEqual(['appeared']);

    sim.board.remove(ev.EventId);
    await eventually(async () => (await records()).length === 2, 'the removed record after all faults');
    const changes = (await records()).map((r) => r.Change);
    expect(changes).toEqual(['appeared', 'removed']);
    expect(agent.stats.get('imds.failures')).toBeGreaterThanOrEqual(FAULTS.length * 3);
  });

  it('logs one line when a failure starts and one when it recovers, not one per poll', async () => {
    const sim = await simulator();
    const logs = captureLogs('info');
    const { agent } = fastAgent(sim, await tempDir(), {
      log: logs.log,
      overrides: { 'imds.maxBackoffMs': 20 },
    });
    await agent.start();
    cleanups.push(() => agent.stop());
    await sim.waitForServed(1);
    sim.injectFault({ kind: 'status', status: 500, count: 25 });
    await sim.waitForServed(2);
    expect(agent.stats.get('imds.failures')).toBe(25);
    const imdsLines = logs.messages().filter((m) => m.startsWith('IMDS scheduled events'));
    expect(imdsLines).toEqual([expect.stringMatching(/HTTP 500/), 'IMDS scheduled events: recovered']);
  });

  it('warns when configured to poll faster than IMDS can share with other processes', async () => {
    const sim = await simulator();
    const logs = captureLogs('info');
    const { agent } = fastAgent(sim, await tempDir(), { log: logs.log });
    await agent.start();
    cleanups.push(() => agent.stop());
    expect(logs.messages('warn')).toEqual([expect.stringMatching(/polling faster than 2 requests\/s/)]);
  });

  it('tolerates a slow first answer (enabling delay), then uses the short timeout', async () => {
    const sim = await simulator();
    sim.injectFault({ kind: 'hang', ms: 200 });
    const { agent, records } = fastAgent(sim, await tempDir(), {
      overrides: { 'imds.firstRequestTimeoutMs': 5000 },
    });
    await agent.start();
    cleanups.push(() => agent.stop());
    await sim.waitForServed(1);
    expect(agent.stats.get('imds.failures')).toBe(0);
    sim.injectFault({ kind: 'hang', ms: 200 });
    await sim.waitForServed(1);
    expect(agent.stats.get('imds.failures')).toBe(1);
    expect(await records()).toEqual([]);
  });

  it('shutdown does not wait for a first request that IMDS holds open (enabling delay)', async () => {
    const sim = await simulator();
    sim.injectFault({ kind: 'hang', ms: 20_000 });
    const { agent } = fastAgent(sim, await tempDir(), {
      overrides: { 'imds.firstRequestTimeoutMs': 120_000 },
    });
    await agent.start();
    await eventually(() => sim.requests > 0, 'the first request');
    let hangEnded = false;
    setTimeout(() => {
      hangEnded = true;
    }, 19_000).unref();
    await agent.stop();
    expect(hangEnded).toBe(false);
  });

  it('keeps polling when IMDS refuses connections, and picks up when it comes back', async () => {
    const sim = await simulator();
    const { agent, records } = fastAgent(sim, await tempDir());
    await agent.start();
    cleanups.push(() => agent.stop());
    await sim.waitForServed(2);
    const url = new URL(sim.url);
    await sim.stop();
    await eventually(() => agent.stats.get('imds.failures') >= 3, 'failed polls while IMDS is down');
    const revived = new ImdsSimulator({ port: Number(url.port), maxRequestsPerSecond: 100_000 });
    await revived.start();
    cleanups.push(() => revived.stop());
    revived.board.schedule({ EventType: 'Freeze' }, Date.now() + 900_000, revived.vmName);
    await eventually(async () => (await records()).length === 1, 'the event after IMDS came back');
  });
});

describe('retry policy (virtual time)', () => {
  async function sourceWithClock(
    sim: ImdsSimulator,
    handler: (c: readonly EventChange[]) => Promise<boolean> = async () => true,
  ) {
    const clock = new RecordingClock();
    const client = new ImdsClient({
      baseUrl: sim.url,
      scheduledEventsApiVersion: '2020-07-01',
      computeApiVersion: '2021-02-01',
      minRequestSpacingMs: 0,
      clock,
    });
    const source = new ScheduledEventsSource({
      client,
      store: new WatchStateStore(await tempDir(), silentLogger()),
      handler,
      clock,
      log: silentLogger(),
      stats: new Stats(),
      pollIntervalMs: 1000,
      requestTimeoutMs: 500,
      firstRequestTimeoutMs: 1000,
      watchGapToleranceMs: 5000,
      backoff: { initialDelayMs: 1000, maxDelayMs: 30_000 },
      goneRetryWindowMs: 70_000,
      random: () => 1,
    });
    cleanups.push(async () => {
      await source.stopPolling();
      await client.close();
    });
    return { clock, source };
  }

  it('backs off exponentially on 5xx, capped, and returns to 1 Hz after success', async () => {
    const sim = await simulator();
    sim.injectFault({ kind: 'status', status: 500, count: 7 });
    const { clock, source } = await sourceWithClock(sim);
    await source.start();
    await eventually(() => clock.sleeps.length >= 9, 'nine poll delays');
    expect(clock.sleeps.slice(0, 9)).toEqual([1000, 2000, 4000, 8000, 16000, 30000, 30000, 1000, 1000]);
  });

  it('retries 410 Gone at the poll interval for 70 s, then backs off', async () => {
    const sim = await simulator();
    sim.injectFault({ kind: 'status', status: 410, count: 75 });
    const { clock, source } = await sourceWithClock(sim);
    await source.start();
    await eventually(() => clock.sleeps.length >= 73, 'seventy-three poll delays');
    expect(clock.sleeps.slice(0, 70).every((d) => d === 1000)).toBe(true);
    expect(clock.sleeps.slice(70, 73)).toEqual([1000, 2000, 4000]);
  });

  it('honours Retry-After on 429', async () => {
    const sim = await simulator();
    sim.injectFault({ kind: 'status', status: 429, retryAfter: '7' });
    const { clock, source } = await sourceWithClock(sim);
    await source.start();
    await eventually(() => clock.sleeps.length >= 2, 'two poll delays');
    expect(clock.sleeps.slice(0, 2)).toEqual([7000, 1000]);
  });

  it('caps Retry-After at the backoff cap, so a far-off date cannot stop the watch', async () => {
    const sim = await simulator();
    sim.injectFault({ kind: 'status', status: 429, retryAfter: '3600' });
    const { clock, source } = await sourceWithClock(sim);
    await source.start();
    await eventually(() => clock.sleeps.length >= 2, 'two poll delays');
    expect(clock.sleeps.slice(0, 2)).toEqual([30_000, 1000]);
  });

  it('never waits less than the poll interval between requests, retries included (≤ 1 request/s)', async () => {
    const sim = await simulator();
    for (const f of FAULTS) sim.injectFault({ ...f, ...(f.kind === 'hang' ? { ms: 5 } : {}), count: 2 });
    const { clock, source } = await sourceWithClock(sim);
    await source.start();
    await eventually(() => clock.sleeps.length >= FAULTS.length * 2 + 3, 'every fault played');
    expect(Math.min(...clock.sleeps)).toBeGreaterThanOrEqual(1000);
  });

  it('a change handler that is not ready yet gets the same changes again on the next poll', async () => {
    const sim = await simulator();
    sim.board.schedule({ EventType: 'Freeze' }, Date.now() + 900_000, sim.vmName);
    const offered: string[][] = [];
    let ready = false;
    const { source } = await sourceWithClock(sim, async (c) => {
      offered.push(c.map((x) => x.change));
      return ready;
    });
    await source.start();
    await eventually(() => offered.length >= 3, 'three offers');
    expect(source.pendingChanges).toBe(1);
    ready = true;
    await eventually(() => source.pendingChanges === 0, 'the changes accepted');
    expect(offered.every((o) => o.join() === 'appeared')).toBe(true);
  });
});
