import { join } from 'node:path';
import type { Logger } from 'pino';
import { ForwarderAgent } from '../../src/agent.ts';
import { parseConfig } from '../../src/config/load.ts';
import { silentLogger } from '../../src/log.ts';
import type { ImdsSimulator } from '../../src/simulator/server.ts';
import type { ScheduledEventRecord } from '../../src/transform/record.ts';
import { readJsonLines } from './fs.ts';

export const FAST = {
  pollIntervalMs: 40,
  'imds.requestTimeoutMs': 30,
  'imds.firstRequestTimeoutMs': 2000,
  'imds.minRequestSpacingMs': 0,
  'imds.maxBackoffMs': 200,
  'imds.identityWaitMs': 2000,
  shutdownTimeoutMs: 3000,
  statsIntervalMs: 0,
} as const;

/** The real agent, in-process, against a simulator, with a file sink. */
export function fastAgent(
  sim: ImdsSimulator,
  stateDir: string,
  opts: { log?: Logger; overrides?: Record<string, unknown>; machineIdPath?: string } = {},
): { agent: ForwarderAgent; outPath: string; records: () => Promise<ScheduledEventRecord[]> } {
  const outPath = join(stateDir, 'out', 'records.jsonl');
  const config = parseConfig(
    {},
    {},
    {
      ...FAST,
      stateDir,
      'imds.baseUrl': sim.url,
      sinks: [{ type: 'file', path: outPath }],
      ...opts.overrides,
    },
  );
  const agent = new ForwarderAgent({
    config,
    log: opts.log ?? silentLogger(),
    ...(opts.machineIdPath ? { machineIdPath: opts.machineIdPath } : {}),
  });
  return { agent, outPath, records: () => readJsonLines<ScheduledEventRecord>(outPath) };
}
