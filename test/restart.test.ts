import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ImdsSimulator } from '../src/simulator/server.ts';
import { recordId } from '../src/transform/record.ts';
import { fastAgent } from './helpers/agent.ts';
import { eventually, useTempDirs } from './helpers/fs.ts';
import { captureLogs } from './helpers/logs.ts';

const tempDir = useTempDirs();
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function setup() {
  const sim = new ImdsSimulator({ maxRequestsPerSecond: 100_000 });
  await sim.start();
  cleanups.push(() => sim.stop());
  return { sim, dir: await tempDir() };
}

async function runUntil(sim: ImdsSimulator, dir: string, n: number, log = captureLogs('info')) {
  const h = fastAgent(sim, dir, { log: log.log });
  await h.agent.start();
  await eventually(async () => (await h.records()).length >= n, `${n} records`);
  await sim.waitForServed(2);
  await h.agent.stop();
  return { records: await h.records(), log };
}

describe('state across restarts', () => {
  it('no duplicate appeared/started after a restart; removed for what ended while down, Outcome unknown', async () => {
    const { sim, dir } = await setup();
    const a = sim.board.schedule({ EventType: 'Reboot' }, Date.now() + 900_000, sim.vmName);
    const b = sim.board.appearStarted({ EventType: 'Redeploy' }, sim.vmName);
    const c = sim.board.schedule({ EventType: 'Freeze' }, Date.now() + 900_000, sim.vmName);
    await runUntil(sim, dir, 4); // a appeared, b appeared+started, c appeared

    // While the agent is down: a is cancelled (or ran, nobody knows), b completes, c starts.
    sim.board.remove(a.EventId);
    sim.board.remove(b.EventId);
    sim.board.start(c.EventId);
    const { records } = await runUntil(sim, dir, 7);
    expect(records.map((r) => `${r.Change}:${r.Outcome}:${r.EventType}`)).toEqual([
      'appeared::Reboot',
      'appeared::Redeploy',
      'started::Redeploy',
      'appeared::Freeze',
      'started::Freeze',
      'removed:unknown:Reboot',
      'removed:completed:Redeploy',
    ]);
    // FirstSeen survives the restart.
    const freeze = records.filter((r) => r.EventType === 'Freeze');
    expect(freeze[1]!.FirstSeen).toBe(freeze[0]!.FirstSeen);
  });

  it('a restart with nothing changed emits nothing', async () => {
    const { sim, dir } = await setup();
    sim.board.schedule({ EventType: 'Reboot' }, Date.now() + 900_000, sim.vmName);
    await runUntil(sim, dir, 1);
    const { records } = await runUntil(sim, dir, 1);
    expect(records).toHaveLength(1);
  });

  it.each([
    ['garbage', 'not json at all {'],
    ['wrong shape', JSON.stringify({ format: 1, events: 'x' })],
    ['unknown format', JSON.stringify({ format: 99, documentIncarnation: 1, events: {} })],
  ])(
    'a corrupt state file (%s) gives a clear warning and a fresh start, not a crash',
    async (_n, content) => {
      const { sim, dir } = await setup();
      sim.board.schedule({ EventType: 'Reboot' }, Date.now() + 900_000, sim.vmName);
      const first = await runUntil(sim, dir, 1);
      await writeFile(join(dir, 'watch-state.json'), content);
      const logs = captureLogs('info');
      const { records } = await runUntil(sim, dir, 2, logs);
      expect(logs.messages('warn')).toEqual(
        expect.arrayContaining([expect.stringMatching(/watch state corrupt; starting fresh/)]),
      );
      // Re-reported as appeared, with the same RecordId, so consumers de-duplicate it.
      expect(records).toHaveLength(2);
      expect(records[1]!.RecordId).toBe(first.records[0]!.RecordId);
    },
  );

  it('an unreadable state path (a directory) also gives a warning and a fresh start', async () => {
    const { sim, dir } = await setup();
    const { mkdir } = await import('node:fs/promises');
    await mkdir(join(dir, 'watch-state.json'));
    const logs = captureLogs('info');
    const h = fastAgent(sim, dir, { log: logs.log });
    await h.agent.start();
    await sim.waitForServed(2);
    await h.agent.stop();
    expect(logs.messages('warn')).toEqual(
      expect.arrayContaining([expect.stringMatching(/watch state unreadable/)]),
    );
  });
});

describe('VM identity', () => {
  it('records wait for the identity, then carry it; refreshed values are used later', async () => {
    const { sim, dir } = await setup();
    sim.board.schedule({ EventType: 'Reboot' }, Date.now() + 900_000, sim.vmName);
    const h = fastAgent(sim, dir, { overrides: { 'imds.identityRefreshMs': 1000 } });
    await h.agent.start();
    cleanups.push(() => h.agent.stop());
    const [first] = await eventually(async () => {
      const r = await h.records();
      return r.length === 1 ? r : null;
    }, 'first record');
    expect(first).toMatchObject({
      VmId: sim.compute.vmId,
      VmName: 'sim-vm-0',
      Location: 'westeurope',
      Zone: '1',
    });
    sim.compute = { ...sim.compute, vmSize: 'Standard_D4s_v5' };
    await new Promise((r) => setTimeout(r, 1200));
    sim.board.schedule({ EventType: 'Freeze' }, Date.now() + 900_000, sim.vmName);
    const records = await eventually(async () => {
      const r = await h.records();
      return r.length === 2 ? r : null;
    }, 'second record');
    expect(records[1]!.VmSize).toBe('Standard_D4s_v5');
  });

  it('never holds records back forever: without identity they go out after identityWaitMs', async () => {
    const { sim, dir } = await setup();
    sim.compute = {}; // a compute document that names no VM
    sim.board.schedule({ EventType: 'Reboot' }, Date.now() + 900_000, 'other');
    const logs = captureLogs('info');
    const h = fastAgent(sim, dir, { log: logs.log, overrides: { 'imds.identityWaitMs': 300 } });
    await h.agent.start();
    cleanups.push(() => h.agent.stop());
    const [rec] = await eventually(async () => {
      const r = await h.records();
      return r.length ? r : null;
    }, 'a record without identity');
    expect(rec).toMatchObject({ VmId: '', VmName: '', AffectsThisVm: false, Change: 'appeared' });
    expect(logs.messages('warn')).toEqual(
      expect.arrayContaining([expect.stringMatching(/identity still unknown/)]),
    );
  });

  it('on shutdown, changes still waiting for the identity are spooled and delivered, not dropped', async () => {
    const { sim, dir } = await setup();
    sim.compute = {};
    sim.board.schedule({ EventType: 'Reboot' }, Date.now() + 900_000, 'sim-vm-0');
    const h = fastAgent(sim, dir, { overrides: { 'imds.identityWaitMs': 600_000 } });
    await h.agent.start();
    await sim.waitForServed(3);
    expect(await h.records()).toEqual([]);
    await h.agent.stop();
    expect((await h.records()).map((r) => r.Change)).toEqual(['appeared']);
  });

  it('without an identity, RecordIds use the machine id, so VMs of one availability set do not collide', async () => {
    const { sim } = await setup();
    sim.compute = {};
    const ev = sim.board.schedule({ EventType: 'Freeze' }, Date.now() + 900_000, 'sim-vm-0');
    const ids: string[] = [];
    for (const machine of ['0f1e2d3c4b5a69788796a5b4c3d2e1f0', '11112222333344445555666677778888']) {
      const dir = await tempDir();
      await writeFile(join(dir, 'machine-id'), `${machine}\n`);
      const h = fastAgent(sim, dir, {
        overrides: { 'imds.identityWaitMs': 0 },
        machineIdPath: join(dir, 'machine-id'),
      });
      await h.agent.start();
      const [rec] = await eventually(async () => {
        const r = await h.records();
        return r.length ? r : null;
      }, 'a record');
      await h.agent.stop();
      expect(rec!.RecordId).toBe(recordId(`machine-id:${machine}`, ev.EventId, 'appeared', 0));
      ids.push(rec!.RecordId);
    }
    expect(ids[0]).not.toBe(ids[1]);
  });

  it('uses the cached identity at once after a restart', async () => {
    const { sim, dir } = await setup();
    const h = fastAgent(sim, dir);
    await h.agent.start();
    const { access } = await import('node:fs/promises');
    await eventually(
      () =>
        access(join(dir, 'vm-identity.json')).then(
          () => true,
          () => false,
        ),
      'the identity cache',
    );
    await h.agent.stop();
    sim.compute = {}; // IMDS compute now useless
    sim.board.schedule({ EventType: 'Reboot' }, Date.now() + 900_000, 'sim-vm-0');
    const { records } = await runUntil(sim, dir, 1);
    expect(records[0]).toMatchObject({ VmName: 'sim-vm-0', AffectsThisVm: true });
  });
});
