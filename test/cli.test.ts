import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadScenario } from '../src/simulator/scenario.ts';
import { ImdsSimulator } from '../src/simulator/server.ts';
import { useTempDirs } from './helpers/fs.ts';
import { cli, runToEnd } from './helpers/process.ts';

const tempDir = useTempDirs();

let sim: ImdsSimulator;
beforeAll(async () => {
  sim = new ImdsSimulator();
  await sim.start();
});
afterAll(() => sim.stop());

describe('CLI', () => {
  it('runs on Node 24 as the project pins it', () => {
    expect(process.version).toMatch(/^v24\./);
  });

  it('--version and --help', async () => {
    const v = await cli(['--version']);
    expect(v.code).toBe(0);
    expect(v.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
    for (const cmd of [[], ['run'], ['demo'], ['simulate'], ['once']]) {
      const h = await cli([...cmd, '--help']);
      expect(h.code).toBe(0);
      expect(h.stdout).toMatch(/Usage: scheduled-events-forwarder/);
    }
  });

  it('the installed command (compiled, with the daemon V8 flags in its shebang) runs', async () => {
    const out = await runToEnd('bin/scheduled-events-forwarder.js', ['once', '--timeout-ms', '2000'], {
      ...process.env,
      SEF_IMDS_BASE_URL: sim.url,
    });
    expect(out.code).toBe(0);
    expect(JSON.parse(out.stdout)).toHaveProperty('DocumentIncarnation');
  });

  it('exits 2 naming the bad setting, the expected and the actual value', async () => {
    const dir = await tempDir();
    const cfg = join(dir, 'agent.json');
    await writeFile(cfg, JSON.stringify({ pollIntervalMs: 500, imds: { requestTimeoutMs: 900 } }));
    const r = await cli(['run', '--config', cfg]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/imds\.requestTimeoutMs: expected less than pollIntervalMs \(500\).*got 900/);
    const e = await cli(['run'], { SEF_POLL_INTERVAL_MS: 'often' });
    expect(e.code).toBe(2);
    expect(e.stderr).toMatch(/pollIntervalMs: .*got "often" \(from SEF_POLL_INTERVAL_MS\)/);
    const bad = await cli(['demo', '--speed', '-3']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--speed: expected a number > 0, got "-3"/);
    expect((await cli(['nonsense'])).code).toBe(2);
  });

  it('validate prints the effective settings, or exits 2 naming the problem', async () => {
    const ok = await cli(['validate'], { SEF_POLL_INTERVAL_MS: '2000' });
    expect(ok.code).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({ pollIntervalMs: 2000, imds: { requestTimeoutMs: 800 } });
    const bad = await cli(['validate'], { SEF_SINKS: '[{"type":"eventhubs"}]' });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/sinks\.0\.type: expected \("stdout" \| "file"\); got "eventhubs"/);
  });

  it('once prints the current document and exits 0; exits 1 when IMDS fails', async () => {
    const ev = sim.board.schedule({ EventType: 'Freeze' }, Date.now() + 900_000, sim.vmName);
    const r = await cli(['once', '--timeout-ms', '2000'], { SEF_IMDS_BASE_URL: sim.url });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).Events[0]).toMatchObject({
      EventId: ev.EventId,
      EventType: 'Freeze',
      EventStatus: 'Scheduled',
    });
    sim.board.remove(ev.EventId);
    sim.injectFault({ kind: 'status', status: 500 });
    const f = await cli(['once', '--timeout-ms', '2000'], { SEF_IMDS_BASE_URL: sim.url });
    expect(f.code).toBe(1);
    expect(f.stderr).toMatch(/HTTP 500/);
  });

  it('demo plays a scenario on the built-in simulator, prints JSON lines when piped, and ends by itself', async () => {
    const r = await cli(['demo', '--scenario', 'live-migration', '--speed', '600']);
    expect(r.code).toBe(0);
    const lines = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    const expected = (await loadScenario('live-migration')).expect;
    expect(
      lines.map((l) => ({
        change: l.Change,
        eventId: l.EventId,
        outcome: l.Outcome,
        affectsThisVm: l.AffectsThisVm,
      })),
    ).toEqual(expected);
  });

  it('demo --format pretty prints a readable timeline', async () => {
    const r = await cli(['demo', '--scenario', 'cancelled', '--speed', '600', '--format', 'pretty']);
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/appeared\s+Reboot\s+Scheduled\s+this VM Platform NotBefore/);
    expect(lines[1]).toMatch(/removed\s+Reboot\s+Scheduled\s+\(cancelled\) this VM/);
  });

  it('simulate serves the IMDS API until SIGTERM; scenarios lists the built-in scenarios', async () => {
    const child = spawn(process.execPath, ['src/cli.ts', 'simulate', '--port', '0'], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    const { eventually } = await import('./helpers/fs.ts');
    const url = await eventually(
      () => /listening on (http:\/\/[^\s]+)/.exec(stderr)?.[1],
      'the simulator URL',
    );
    const res = await fetch(`${url}/metadata/scheduledevents?api-version=2020-07-01`, {
      headers: { Metadata: 'true' },
    });
    expect(await res.json()).toEqual({ DocumentIncarnation: 1, Events: [] });
    const closed = new Promise<number | null>((r) => child.on('close', r));
    child.kill('SIGTERM');
    expect(await closed).toBe(0);

    const list = await cli(['scenarios']);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/^live-migration\s+The documented live migration/m);
  });

  it('run forwards to the configured file sink and shuts down cleanly on SIGTERM', async () => {
    const dir = await tempDir();
    const out = join(dir, 'records.jsonl');
    const child = spawn(process.execPath, ['src/cli.ts', 'run'], {
      env: {
        ...process.env,
        SEF_IMDS_BASE_URL: sim.url,
        SEF_STATE_DIR: join(dir, 'state'),
        SEF_SINKS: JSON.stringify([{ type: 'file', path: out }]),
        SEF_POLL_INTERVAL_MS: '200',
        SEF_IMDS_REQUEST_TIMEOUT_MS: '150',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    const ev = sim.board.schedule({ EventType: 'Reboot' }, Date.now() + 900_000, sim.vmName);
    const { eventually, readJsonLines } = await import('./helpers/fs.ts');
    await eventually(async () => (await readJsonLines(out)).length === 1, 'a record from the run command');
    const closed = new Promise<number | null>((r) => child.on('close', r));
    child.kill('SIGTERM');
    expect(await closed).toBe(0);
    sim.board.remove(ev.EventId);
    expect(stderr).toMatch(/scheduled-events-forwarder stopped/);
  });
});
