import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import type { Clock } from '../clock.ts';
import type { ImdsSimulator, SimulatorOperation } from './server.ts';

const eventSpec = z
  .object({
    EventId: z.string().optional(),
    EventType: z.enum(['Freeze', 'Reboot', 'Redeploy', 'Preempt', 'Terminate']).optional(),
    Resources: z.array(z.string()).optional(),
    Description: z.string().optional(),
    EventSource: z.enum(['Platform', 'User']).optional(),
    DurationInSeconds: z.number().int().optional(),
    ResourceType: z.string().optional(),
  })
  .strict();

const step = z.discriminatedUnion('op', [
  z.object({
    at: z.number().min(0),
    note: z.string().optional(),
    op: z.literal('schedule'),
    event: eventSpec,
    notBeforeInSeconds: z.number().min(0),
  }),
  z.object({
    at: z.number().min(0),
    note: z.string().optional(),
    op: z.literal('appear-started'),
    event: eventSpec,
  }),
  z.object({
    at: z.number().min(0),
    note: z.string().optional(),
    op: z.literal('start'),
    eventId: z.string(),
  }),
  z.object({
    at: z.number().min(0),
    note: z.string().optional(),
    op: z.literal('update'),
    eventId: z.string(),
    notBeforeInSeconds: z.number().min(0).optional(),
    Resources: z.array(z.string()).optional(),
    Description: z.string().optional(),
    DurationInSeconds: z.number().int().optional(),
  }),
  z.object({
    at: z.number().min(0),
    note: z.string().optional(),
    op: z.literal('remove'),
    eventId: z.string(),
  }),
  z.object({ at: z.number().min(0), note: z.string().optional(), op: z.literal('clear') }),
  z.object({
    at: z.number().min(0),
    note: z.string().optional(),
    op: z.literal('reset-incarnation'),
    clearEvents: z.boolean().optional(),
  }),
]);

const expectation = z
  .object({
    change: z.enum(['appeared', 'started', 'updated', 'removed']),
    eventId: z.string(),
    outcome: z.enum(['', 'completed', 'cancelled', 'unknown']).default(''),
    affectsThisVm: z.boolean(),
  })
  .strict();

export const scenarioSchema = z
  .object({
    name: z.string(),
    description: z.string(),
    /** Overrides of the simulated VM's compute document (e.g. priority Spot). */
    compute: z.record(z.string(), z.unknown()).default({}),
    /** `at` is in simulated seconds from the start. */
    steps: z.array(step).min(1),
    /** The change records an agent watching without a gap must produce, in order per EventId. */
    expect: z.array(expectation),
  })
  .strict();

export type Scenario = z.infer<typeof scenarioSchema>;
export type ScenarioStep = Scenario['steps'][number];

export const SCENARIO_DIR = fileURLToPath(new URL('./scenarios/', import.meta.url));

export async function listScenarios(): Promise<string[]> {
  return (await readdir(SCENARIO_DIR))
    .filter((f) => f.endsWith('.json'))
    .map((f) => f.slice(0, -5))
    .sort();
}

/** A built-in scenario by name, or a JSON file by path. */
export async function loadScenario(nameOrPath: string): Promise<Scenario> {
  const builtIn = (await listScenarios()).includes(nameOrPath);
  const file = builtIn ? join(SCENARIO_DIR, `${nameOrPath}.json`) : nameOrPath;
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    throw new Error(
      `scenario: expected a built-in name (${(await listScenarios()).join(', ')}) or a readable JSON file, got ${JSON.stringify(nameOrPath)}`,
    );
  }
  const parsed = scenarioSchema.safeParse(JSON.parse(text));
  if (!parsed.success) {
    const i = parsed.error.issues[0]!;
    throw new Error(`scenario ${nameOrPath}: ${i.path.join('.')}: ${i.message}`);
  }
  return parsed.data;
}

export function stepToOperation(s: ScenarioStep): SimulatorOperation {
  const { at: _at, note: _note, ...op } = s;
  return op as SimulatorOperation;
}

/** Plays a scenario on a simulator in compressed time: step `at` seconds lands at at/speed real seconds. */
export async function playScenario(
  sim: ImdsSimulator,
  scenario: Scenario,
  opts: {
    speed: number;
    clock: Clock;
    signal?: AbortSignal;
    onStep?: (s: ScenarioStep) => void;
    /**
     * Hold each step until the previous document was served twice (so a poller has processed it):
     * at high speeds two steps could otherwise fall between two polls and a state would go unseen.
     */
    waitForObservation?: boolean;
  },
): Promise<void> {
  // The scenario is the whole script: events start when a step says so, not at NotBefore.
  sim.board.autoStart = false;
  const t0 = opts.clock.now();
  for (const s of scenario.steps) {
    const due = t0 + (s.at * 1000) / opts.speed;
    await opts.clock.sleep(due - opts.clock.now(), opts.signal);
    if (opts.signal?.aborted) return;
    sim.apply(stepToOperation(s));
    opts.onStep?.(s);
    if (opts.waitForObservation) await untilAborted(sim.waitForServed(2), opts.signal);
  }
}

function untilAborted(p: Promise<void>, signal: AbortSignal | undefined): Promise<void> {
  if (!signal) return p;
  return Promise.race([p, new Promise<void>((r) => signal.addEventListener('abort', () => r(), { once: true }))]);
}
