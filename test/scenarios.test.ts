import { afterEach, describe, expect, it } from 'vitest';
import { listScenarios, loadScenario, stepToOperation } from '../src/simulator/scenario.ts';
import { ImdsSimulator } from '../src/simulator/server.ts';
import { recordId } from '../src/transform/record.ts';
import { fastAgent } from './helpers/agent.ts';
import { useTempDirs } from './helpers/fs.ts';

const tempDir = useTempDirs();
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** Steps the scenario: each step is applied once the agent has fully processed the previous document. */
async function runScenario(name: string, overrides: Record<string, unknown> = {}) {
  const scenario = await loadScenario(name);
  const sim = new ImdsSimulator({ compute: scenario.compute, maxRequestsPerSecond: 10_000 });
  await sim.start();
  cleanups.push(() => sim.stop());
  const dir = await tempDir();
  const { agent, records } = fastAgent(sim, dir, { overrides });
  await agent.start();
  cleanups.push(() => agent.stop());
  await sim.waitForServed(2);
  for (const step of scenario.steps) {
    sim.apply(stepToOperation(step));
    await sim.waitForServed(2);
  }
  await agent.stop();
  return { scenario, sim, records: await records() };
}

describe('every built-in scenario yields exactly its expected records', async () => {
  const names = await listScenarios();
  it('has the scenarios the reference requires', () => {
    expect(names).toEqual(
      expect.arrayContaining([
        'live-migration',
        'reboot',
        'redeploy',
        'user-reboot',
        'spot-preempt',
        'terminate',
        'cancelled',
        'host-failure',
        'availability-set-broadcast',
        'incarnation-reset',
      ]),
    );
  });

  it.each(names)('%s', async (name) => {
    const { scenario, sim, records } = await runScenario(name);
    expect(
      records.map((r) => ({
        change: r.Change,
        eventId: r.EventId,
        outcome: r.Outcome,
        affectsThisVm: r.AffectsThisVm,
      })),
    ).toEqual(scenario.expect);
    const vmId = String(sim.compute.vmId);
    for (const r of records) {
      expect(r.RecordId).toBe(recordId(vmId, r.EventId, r.Change, r.DocumentIncarnation));
      expect(r.VmName).toBe(sim.vmName);
      expect(r.Priority).toBe(String(sim.compute.priority));
    }
    expect(new Set(records.map((r) => r.RecordId)).size).toBe(records.length);
  });
});

describe('scenario details', () => {
  it('live migration follows the documented incarnations and NotBefore rules', async () => {
    const { records } = await runScenario('live-migration');
    const [appeared, started, removed] = records;
    expect(appeared).toMatchObject({
      EventType: 'Freeze',
      EventStatus: 'Scheduled',
      DocumentIncarnation: 2,
      DurationInSeconds: 5,
    });
    expect(appeared!.NotBefore).toMatch(/Z$/);
    expect(started).toMatchObject({ EventStatus: 'Started', NotBefore: null, DocumentIncarnation: 3 });
    expect(removed).toMatchObject({ Outcome: 'completed', DocumentIncarnation: 4 });
    expect(started!.FirstSeen).toBe(appeared!.FirstSeen);
    expect(appeared!.Resources).toEqual(['sim-vm-0', 'WestNO_1']);
  });

  it('RecordIds are the same when the same scenario is observed twice (another agent, another state dir)', async () => {
    const a = await runScenario('reboot');
    const b = await runScenario('reboot');
    expect(b.records.map((r) => r.RecordId)).toEqual(a.records.map((r) => r.RecordId));
  });

  it('works on an older api-version whose documents lack Description, EventSource and DurationInSeconds', async () => {
    const { records } = await runScenario('live-migration', { 'imds.apiVersion': '2017-08-01' });
    expect(records.map((r) => r.Change)).toEqual(['appeared', 'started', 'removed']);
    expect(records[0]).toMatchObject({ Description: '', EventSource: '', DurationInSeconds: -1 });
  });
});
