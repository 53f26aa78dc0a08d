// Poll-cost benchmark (not a test): the agent against the IMDS simulator at 1 Hz, side by side
// with a minimal keep-alive GET loop in plain Node (the floor), in one run.
//
//   npm run bench                 # 10 warm-up + 60 quiet polls, then 20 changes (about 2 minutes)
//   npm run bench -- --polls 20   # quicker, coarser
//
// Prints CPU ms per poll (on-CPU time of every thread, from /proc/<pid>/task/*/schedstat),
// peak RSS (VmHWM), and detection-to-sink latency: a change made in the simulator until its
// record is in the file sink.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ImdsSimulator } from '../src/simulator/server.ts';

const { values } = parseArgs({
  options: { polls: { type: 'string', default: '60' }, interval: { type: 'string', default: '1000' } },
});
const polls = Number(values.polls);
const intervalMs = Number(values.interval);
const warmupPolls = 10;
const changesWanted = Number(process.env.SEF_BENCH_CHANGES ?? 20);
const AGENT_NODE_FLAGS = (process.env.SEF_BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean);

async function cpuNs(pid: number): Promise<number> {
  let total = 0;
  for (const tid of await readdir(`/proc/${pid}/task`)) {
    try {
      total += Number((await readFile(`/proc/${pid}/task/${tid}/schedstat`, 'utf8')).split(' ')[0]);
    } catch {
      // thread ended between listing and reading
    }
  }
  return total;
}

async function peakRssMb(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return kb / 1024;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main(): Promise<void> {
  const sim = new ImdsSimulator({ maxRequestsPerSecond: 1000 });
  await sim.start();
  const dir = await mkdtemp(join(tmpdir(), 'sef-bench-'));
  const out = join(dir, 'records.jsonl');
  // The agent as it is deployed: the installed command (compiled JavaScript, the V8 flags of its
  // shebang), or plain `node dist/src/cli.js` with SEF_BENCH_NODE_FLAGS to try other flags.
  const agentCommand = AGENT_NODE_FLAGS.length
    ? [process.execPath, ...AGENT_NODE_FLAGS, 'dist/src/cli.js', 'run']
    : ['bin/scheduled-events-forwarder.js', 'run'];
  const agent: ChildProcess = spawn(agentCommand[0]!, agentCommand.slice(1), {
    env: {
      ...process.env,
      SEF_IMDS_BASE_URL: sim.url,
      SEF_STATE_DIR: join(dir, 'state'),
      SEF_POLL_INTERVAL_MS: String(intervalMs),
      SEF_SINKS: JSON.stringify([{ type: 'file', path: out }]),
      SEF_LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const floor: ChildProcess = spawn(
    process.execPath,
    [
      'bench/floor-client.mjs',
      `${sim.url}/metadata/scheduledevents?api-version=2020-07-01`,
      String(intervalMs),
    ],
    {
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  const agentUa = (ua: string) => ua.startsWith('scheduled-events-forwarder/');
  const count = (pred: (ua: string) => boolean) =>
    [...sim.requestsByUserAgent.entries()].filter(([ua]) => pred(ua)).reduce((n, [, c]) => n + c, 0);
  const agentPolls = () => count(agentUa);
  const floorPolls = () => count((ua) => ua === 'floor');

  const giveUpAt = Date.now() + 60_000 + warmupPolls * intervalMs;
  while (agentPolls() < warmupPolls || floorPolls() < warmupPolls) {
    if (Date.now() > giveUpAt) throw new Error('the agent or the floor is not polling; see its stderr above');
    await sleep(50);
  }

  // Phase 1, quiet: nothing changes, both sides only poll. CPU per poll is compared here.
  const start = {
    agentCpu: await cpuNs(agent.pid!),
    floorCpu: await cpuNs(floor.pid!),
    agentPolls: agentPolls(),
    floorPolls: floorPolls(),
  };
  while (agentPolls() - start.agentPolls < polls) await sleep(20);
  const end = {
    agentCpu: await cpuNs(agent.pid!),
    floorCpu: await cpuNs(floor.pid!),
    agentPolls: agentPolls(),
    floorPolls: floorPolls(),
  };

  // Phase 2, changes at random moments: latency = change made in the simulator -> its record in the file sink.
  const latencies: number[] = [];
  let seenLines = 0;
  for (let i = 0; i < changesWanted; i++) {
    await sleep(Math.random() * intervalMs * 2);
    const existing = sim.board.events[0];
    if (existing) sim.board.remove(existing.EventId);
    else sim.board.schedule({ EventType: 'Freeze' }, Date.now() + 900_000, sim.vmName);
    const madeAt = performance.now();
    for (;;) {
      const text = await readFile(out, 'utf8').catch(() => '');
      const lines = text.split('\n').filter(Boolean).length;
      if (lines > seenLines) {
        latencies.push(performance.now() - madeAt);
        seenLines = lines;
        break;
      }
      await sleep(2);
    }
  }
  const agentRss = await peakRssMb(agent.pid!);
  const floorRss = await peakRssMb(floor.pid!);
  agent.kill('SIGTERM');
  floor.kill('SIGTERM');
  await sim.stop();
  await rm(dir, { recursive: true, force: true });

  // The agent's count includes its instance-compute reads; both are IMDS requests it makes.
  const agentPerPoll = (end.agentCpu - start.agentCpu) / 1e6 / (end.agentPolls - start.agentPolls);
  const floorPerPoll = (end.floorCpu - start.floorCpu) / 1e6 / (end.floorPolls - start.floorPolls);
  const sorted = [...latencies].sort((a, b) => a - b);
  const rows = [
    ['', 'agent', 'floor', 'ratio', 'target'],
    [
      'CPU ms / poll',
      agentPerPoll.toFixed(3),
      floorPerPoll.toFixed(3),
      `${(agentPerPoll / floorPerPoll).toFixed(2)}x`,
      '<= 1.5x floor',
    ],
    [
      'peak RSS MB',
      agentRss.toFixed(1),
      floorRss.toFixed(1),
      `${(agentRss / floorRss).toFixed(2)}x`,
      '<= 80 MB (agent)',
    ],
    [
      'polls measured',
      String(end.agentPolls - start.agentPolls),
      String(end.floorPolls - start.floorPolls),
      '',
      '',
    ],
  ];
  console.log(
    `poll-cost benchmark: ${polls} quiet polls at ${intervalMs} ms after ${warmupPolls} warm-up polls, Node ${process.version}\n  agent: ${agentCommand.join(' ')}`,
  );
  for (const r of rows) console.log(r.map((c, i) => c.padEnd(i === 0 ? 16 : 10)).join(' '));
  console.log(
    `detection-to-sink latency over ${sorted.length} changes: p50 ${percentile(sorted, 50).toFixed(0)} ms, p99 ${percentile(sorted, 99).toFixed(0)} ms, max ${(sorted.at(-1) ?? Number.NaN).toFixed(0)} ms (target p99 <= ${intervalMs + 100} ms)`,
  );
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
