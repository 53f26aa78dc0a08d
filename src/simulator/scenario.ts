import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as v from 'valibot';
import type { Clock } from '../clock.ts';
import type { ImdsSimulator, SimulatorOperation } from './server.ts';

const eventSpec = v.strictObject({
  EventId: v.optional(v.string()),
  EventType: v.optional(v.picklist(['Freeze', 'Reboot', 'Redeploy', 'Preempt', 'Terminate'])),
  Resources: v.optional(v.array(v.string())),
  Description: v.optional(v.string()),
  EventSource: v.optional(v.picklist(['Platform', 'User'])),
  DurationInSeconds: v.optional(v.pipe(v.number(), v.integer())),
  ResourceType: v.optional(v.string()),
});

const at = v.pipe(v.number(), v.minValue(0));
const note = v.optional(v.string());
const step = v.variant('op', [
  v.strictObject({
    at,
    note,
    op: v.literal('schedule'),
    event: eventSpec,
    notBeforeInSeconds: v.pipe(v.number(), v.minValue(0)),
  }),
  v.strictObject({ at, note, op: v.literal('appear-started'), event: eventSpec }),
  v.strictObject({ at, note, op: v.literal('start'), eventId: v.string() }),
  v.strictObject({
    at,
    note,
    op: v.literal('update'),
    eventId: v.string(),
    notBeforeInSeconds: v.optional(v.pipe(v.number(), v.minValue(0))),
    Resources: v.optional(v.array(v.string())),
    Description: v.optional(v.string()),
    DurationInSeconds: v.optional(v.pipe(v.number(), v.integer())),
  }),
  v.strictObject({ at, note, op: v.literal('remove'), eventId: v.string() }),
  v.strictObject({ at, note, op: v.literal('clear') }),
  v.strictObject({ at, note, op: v.literal('reset-incarnation'), clearEvents: v.optional(v.boolean()) }),
]);

const expectation = v.strictObject({
  change: v.picklist(['appeared', 'started', 'updated', 'removed']),
  eventId: v.string(),
  outcome: v.optional(v.picklist(['', 'completed', 'cancelled', 'unknown']), ''),
  affectsThisVm: v.boolean(),
});

export const scenarioSchema = v.strictObject({
  name: v.string(),
  description: v.string(),
  /** Overrides of the simulated VM's compute document (e.g. priority Spot). */
  compute: v.optional(v.record(v.string(), v.unknown()), {}),
  /** `at` is in simulated seconds from the start. */
  steps: v.pipe(v.array(step), v.minLength(1)),
  /** The change records an agent watching without a gap must produce, in order. */
  expect: v.array(expectation),
});

export type Scenario = v.InferOutput<typeof scenarioSchema>;
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
  const parsed = v.safeParse(scenarioSchema, JSON.parse(text));
  if (!parsed.success) {
    const i = parsed.issues[0];
    throw new Error(
      `scenario ${nameOrPath}: ${(i.path ?? []).map((p) => String(p.key)).join('.')}: ${i.message}`,
    );
  }
  return parsed.output;
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
  return Promise.race([
    p,
    new Promise<void>((r) => signal.addEventListener('abort', () => r(), { once: true })),
  ]);
}
