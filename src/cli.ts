#!/usr/bin/env node
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { systemClock } from './clock.ts';
import { ConfigError, loadConfig } from './config/load.ts';
import { createLogger } from './log.ts';
import { AGENT_VERSION } from './version.ts';

// Commands load what they use: the agent on every VM never loads the simulator (and node:http
// with it) or the demo's colours.

/** Exit codes: 0 ok, 1 runtime failure, 2 bad configuration or arguments. */
const EXIT_USAGE = 2;

function positiveNumber(name: string) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isFinite(n) || n <= 0)
      throw new InvalidArgumentError(`${name}: expected a number > 0, got ${JSON.stringify(value)}`);
    return n;
  };
}

function port(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535)
    throw new InvalidArgumentError(`--port: expected 0-65535, got ${JSON.stringify(value)}`);
  return n;
}

/** Runs until SIGINT/SIGTERM, then shuts down in order; a second signal exits at once. */
function onShutdownSignal(handler: (signal: string) => Promise<void>): void {
  let stopping = false;
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.on(sig, () => {
      if (stopping) process.exit(130);
      stopping = true;
      handler(sig).then(
        () => process.exit(0),
        (err) => {
          console.error(err);
          process.exit(1);
        },
      );
    });
  }
}

async function runCommand(opts: { config?: string }): Promise<void> {
  const config = await loadConfig(opts.config ? { configPath: opts.config } : {});
  const { ForwarderAgent } = await import('./agent.ts');
  const log = createLogger(config.log.level);
  const agent = new ForwarderAgent({ config, log });
  onShutdownSignal(async (signal) => {
    log.info({ signal }, 'shutting down');
    await agent.stop();
  });
  await agent.start();
}

async function onceCommand(opts: { config?: string; timeoutMs?: number }): Promise<void> {
  const config = await loadConfig(opts.config ? { configPath: opts.config } : {});
  const { ImdsClient } = await import('./sources/imds/client.ts');
  const client = new ImdsClient({
    baseUrl: config.imds.baseUrl,
    scheduledEventsApiVersion: config.imds.apiVersion,
    computeApiVersion: config.imds.computeApiVersion,
    minRequestSpacingMs: 0,
    clock: systemClock,
  });
  try {
    const res = await client.getScheduledEvents(opts.timeoutMs ?? config.imds.firstRequestTimeoutMs);
    if (!res.ok) {
      console.error(`scheduled-events-forwarder once: ${config.imds.baseUrl}: ${res.failure.message}`);
      process.exitCode = 1;
      return;
    }
    process.stdout.write(`${JSON.stringify(res.value, null, 2)}\n`);
  } finally {
    await client.close();
  }
}

async function simulateCommand(opts: {
  host: string;
  port: number;
  scenario?: string;
  speed: number;
  maxRps: number;
}): Promise<void> {
  const { loadScenario, playScenario } = await import('./simulator/scenario.ts');
  const { ImdsSimulator } = await import('./simulator/server.ts');
  const scenario = opts.scenario ? await loadScenario(opts.scenario) : null;
  const sim = new ImdsSimulator({
    host: opts.host,
    port: opts.port,
    speed: opts.speed,
    maxRequestsPerSecond: opts.maxRps,
    ...(scenario ? { compute: scenario.compute } : {}),
  });
  const url = await sim.start();
  console.error(`IMDS simulator listening on ${url}`);
  console.error(`  GET  ${url}/metadata/scheduledevents?api-version=2020-07-01   (header Metadata: true)`);
  console.error(
    `  POST ${url}/simulator/events   {"op":"schedule","event":{"EventType":"Reboot"},"notBeforeInSeconds":900}`,
  );
  console.error(`  POST ${url}/simulator/faults   {"kind":"status","status":500,"count":3}`);
  console.error(`  GET  ${url}/simulator/state`);
  const stop = new AbortController();
  onShutdownSignal(async () => {
    stop.abort();
    await sim.stop();
  });
  if (scenario) {
    await playScenario(sim, scenario, {
      speed: opts.speed,
      clock: systemClock,
      signal: stop.signal,
      onStep: (s) =>
        console.error(`scenario ${scenario.name}: t=${s.at}s ${s.op}${s.note ? ` (${s.note})` : ''}`),
    });
  }
}

async function demoCommand(opts: {
  scenario: string;
  speed: number;
  format: 'auto' | 'json' | 'pretty';
}): Promise<void> {
  const { loadScenario, playScenario } = await import('./simulator/scenario.ts');
  const { ImdsSimulator } = await import('./simulator/server.ts');
  const { ForwarderAgent } = await import('./agent.ts');
  const { default: pc } = await import('picocolors');
  const scenario = await loadScenario(opts.scenario);
  const sim = new ImdsSimulator({ speed: opts.speed, compute: scenario.compute });
  const url = await sim.start();
  const stateDir = await mkdtemp(join(tmpdir(), 'sef-demo-'));
  const config = await loadConfig({
    env: {},
    overrides: {
      stateDir,
      pollIntervalMs: 500,
      'imds.baseUrl': url,
      'imds.requestTimeoutMs': 400,
      'imds.identityWaitMs': 5000,
      sinks: [{ type: 'stdout', format: opts.format }],
      'log.level': 'warn',
      shutdownTimeoutMs: 5000,
      statsIntervalMs: 0,
    },
  });
  const log = createLogger(config.log.level);
  const agent = new ForwarderAgent({ config, log });
  const stop = new AbortController();
  const last = scenario.steps.at(-1)!.at;
  if (process.stdout.isTTY || opts.format === 'pretty') {
    console.error(pc.bold(`scheduled-events-forwarder demo: scenario "${scenario.name}"`));
    console.error(pc.dim(`${scenario.description}`));
    console.error(
      pc.dim(
        `IMDS simulator on ${url}, ${opts.speed}x time (about ${Math.max(1, Math.round(last / opts.speed))} s); state in ${stateDir}\n`,
      ),
    );
  }
  onShutdownSignal(async () => {
    stop.abort();
  });
  await agent.start();
  await playScenario(sim, scenario, {
    speed: opts.speed,
    clock: systemClock,
    signal: stop.signal,
    waitForObservation: true,
  });
  await agent.stop();
  await sim.stop();
  await rm(stateDir, { recursive: true, force: true });
  if (process.stdout.isTTY || opts.format === 'pretty') {
    const sent = agent.stats.get('sink.stdout.sent');
    console.error(
      pc.dim(`\n${sent} change records forwarded. Try: npm run cli -- demo --format json | jq .`),
    );
  }
}

export function buildProgram(): Command {
  const program = new Command()
    .name('scheduled-events-forwarder')
    .description(
      'Forwards Azure Scheduled Events from IMDS, durably, to local files, Event Hubs and Log Analytics.',
    )
    .version(AGENT_VERSION)
    .showHelpAfterError()
    .exitOverride();

  program
    .command('run')
    .description('poll IMDS and forward change records to the configured sinks until SIGINT/SIGTERM')
    .option('-c, --config <path>', 'JSON config file; SEF_* environment variables override it')
    .action(runCommand);

  program
    .command('demo')
    .description('play a scenario on the built-in IMDS simulator and forward it to stdout; ends by itself')
    .option('-s, --scenario <name|path>', 'built-in scenario name or JSON file', 'tour')
    .option('--speed <n>', 'simulated seconds per real second', positiveNumber('--speed'), 60)
    .option(
      '--format <format>',
      'auto (timeline on a terminal, JSON lines when piped), json or pretty',
      'auto',
    )
    .action(async (opts) => {
      if (!['auto', 'json', 'pretty'].includes(opts.format)) {
        throw new InvalidArgumentError(
          `--format: expected auto, json or pretty, got ${JSON.stringify(opts.format)}`,
        );
      }
      await demoCommand(opts);
    });

  program
    .command('simulate')
    .description('run only the IMDS simulator (Scheduled Events, instance compute, managed-identity token)')
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option('-p, --port <port>', 'port (0 picks a free one)', port, 8080)
    .option('-s, --scenario <name|path>', 'play a scenario while running')
    .option('--speed <n>', 'simulated seconds per real second', positiveNumber('--speed'), 1)
    .option('--max-rps <n>', 'requests per second before 429, as IMDS (5)', positiveNumber('--max-rps'), 5)
    .action(simulateCommand);

  program
    .command('validate')
    .description(
      'check a configuration without starting anything; prints the effective settings (exit 0) or the problems (exit 2)',
    )
    .option('-c, --config <path>', 'JSON config file; SEF_* environment variables override it')
    .action(async (opts: { config?: string }) => {
      const config = await loadConfig(opts.config ? { configPath: opts.config } : {});
      process.stdout.write(`${JSON.stringify(config, null, 2)}\n`);
    });

  program
    .command('once')
    .description('poll Scheduled Events once, print the document and exit (0 ok, 1 IMDS failed); a probe')
    .option('-c, --config <path>', 'JSON config file (imds.* settings are used)')
    .option('--timeout-ms <ms>', 'request timeout', positiveNumber('--timeout-ms'))
    .action(onceCommand);

  program
    .command('scenarios')
    .description('list the built-in simulator scenarios')
    .action(async () => {
      const { listScenarios, loadScenario } = await import('./simulator/scenario.ts');
      for (const name of await listScenarios()) {
        const s = await loadScenario(name);
        console.log(`${name.padEnd(28)} ${s.description}`);
      }
    });

  return program;
}

export async function main(argv: readonly string[]): Promise<number> {
  try {
    await buildProgram().parseAsync([...argv]);
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (err) {
    if (err instanceof CommanderError) {
      if (
        err.code === 'commander.helpDisplayed' ||
        err.code === 'commander.version' ||
        err.code === 'commander.help'
      )
        return 0;
      return EXIT_USAGE;
    }
    if (err instanceof ConfigError) {
      console.error(`scheduled-events-forwarder: ${err.message}`);
      return EXIT_USAGE;
    }
    if (err instanceof InvalidArgumentError) {
      console.error(`scheduled-events-forwarder: ${err.message}`);
      return EXIT_USAGE;
    }
    console.error(
      `scheduled-events-forwarder: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`,
    );
    return 1;
  }
}

/** Entry point for the bin and for `node src/cli.ts`: sets the exit code. */
export function runCli(argv: readonly string[]): void {
  main(argv).then((code) => {
    if (code !== 0) process.exit(code);
  });
}

const invokedDirectly = process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href;
if (invokedDirectly) runCli(process.argv);
