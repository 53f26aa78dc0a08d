import { readFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import * as v from 'valibot';
import { type Clock, systemClock } from './clock.ts';
import type { Config } from './config/schema.ts';
import type { Logger } from './log.ts';
import { DeadLetterFile } from './sinks/dead-letter.ts';
import { Dispatcher } from './sinks/dispatcher.ts';
import { sinkDefinition } from './sinks/registry.ts';
import { SinkWorker } from './sinks/sink-worker.ts';
import { Spool } from './sinks/spool.ts';
import type { Sink } from './sinks/types.ts';
import type { EventChange } from './sources/diff.ts';
import { ImdsClient } from './sources/imds/client.ts';
import { IdentityProvider } from './sources/imds/identity-provider.ts';
import { UNKNOWN_VM_IDENTITY } from './sources/imds/vm-identity.ts';
import { ScheduledEventsSource } from './sources/scheduled-events-source.ts';
import { WatchStateStore } from './sources/state-store.ts';
import { Stats } from './stats.ts';
import { buildRecord } from './transform/record.ts';
import { AGENT_VERSION } from './version.ts';

export interface AgentOptions {
  readonly config: Config;
  readonly log: Logger;
  readonly clock?: Clock;
  readonly stdout?: NodeJS.WritableStream & { isTTY?: boolean };
  readonly random?: () => number;
  /** Read for the host key that stands in for an unknown VmId (systemd's machine id). */
  readonly machineIdPath?: string;
}

/** The machine id, or the host name where there is none. */
async function localHostKey(machineIdPath: string): Promise<string> {
  try {
    const id = (await readFile(machineIdPath, 'utf8')).trim();
    if (id) return `machine-id:${id}`;
  } catch {
    // no machine id (a container, say): the host name is the next best thing
  }
  return `hostname:${hostname()}`;
}

/** Wires source -> transform -> spool -> sinks, and shuts them down in that order. */
export class ForwarderAgent {
  readonly stats = new Stats();
  private readonly o: AgentOptions;
  private readonly clock: Clock;
  private readonly client: ImdsClient;
  private readonly identity: IdentityProvider;
  private readonly source: ScheduledEventsSource;
  private spool: Spool | null = null;
  private dispatcher: Dispatcher | null = null;
  private sinks: Sink[] = [];
  private startedAt = 0;
  private warnedNoIdentity = false;
  private statsTimer: NodeJS.Timeout | null = null;
  private stopping: Promise<boolean> | null = null;
  /** Stands in for VmId in RecordIds while the identity is unknown, so VMs do not collide. */
  private hostKey = '';

  constructor(o: AgentOptions) {
    this.o = o;
    const { config, log } = o;
    this.clock = o.clock ?? systemClock;
    const imds = config.imds;
    this.client = new ImdsClient({
      baseUrl: imds.baseUrl,
      scheduledEventsApiVersion: imds.apiVersion,
      computeApiVersion: imds.computeApiVersion,
      minRequestSpacingMs: imds.minRequestSpacingMs,
      connectTimeoutMs: imds.requestTimeoutMs,
      clock: this.clock,
    });
    // IMDS retries start at the poll interval and never exceed maxBackoffMs, for both loops.
    const imdsBackoff = { initialDelayMs: config.pollIntervalMs, maxDelayMs: imds.maxBackoffMs };
    this.identity = new IdentityProvider({
      client: this.client,
      stateDir: config.stateDir,
      clock: this.clock,
      log,
      refreshIntervalMs: imds.identityRefreshMs,
      requestTimeoutMs: imds.firstRequestTimeoutMs,
      backoff: imdsBackoff,
    });
    this.source = new ScheduledEventsSource({
      client: this.client,
      store: new WatchStateStore(config.stateDir, log),
      handler: (changes, final) => this.onChanges(changes, final),
      clock: this.clock,
      log,
      stats: this.stats,
      pollIntervalMs: config.pollIntervalMs,
      requestTimeoutMs: imds.requestTimeoutMs,
      firstRequestTimeoutMs: imds.firstRequestTimeoutMs,
      watchGapToleranceMs: config.watchGapToleranceMs,
      backoff: imdsBackoff,
      goneRetryWindowMs: imds.goneRetryWindowMs,
      ...(o.random ? { random: o.random } : {}),
    });
  }

  async start(): Promise<void> {
    const { config, log } = this.o;
    this.startedAt = this.clock.now();
    this.hostKey = await localHostKey(this.o.machineIdPath ?? '/etc/machine-id');
    this.spool = await Spool.open(join(config.stateDir, 'spool'), {
      maxBytes: config.spool.maxBytes,
      segmentBytes: config.spool.segmentBytes,
      log,
      stats: this.stats,
    });
    const deadLetter = new DeadLetterFile(config.stateDir);
    const workers: SinkWorker[] = [];
    for (const sc of config.sinks) {
      const def = sinkDefinition(sc.type);
      if (!def) throw new Error(`sinks: unknown sink type ${JSON.stringify(sc.type)}`);
      const sink = await def.create(v.parse(v.object(def.settings), sc.settings), {
        name: sc.name,
        log: log.child({ sink: sc.name }),
        clock: this.clock,
        stateDir: config.stateDir,
        stdout: this.o.stdout ?? process.stdout,
      });
      this.sinks.push(sink);
      workers.push(
        new SinkWorker(
          {
            name: sc.name,
            sink,
            maxBatchRecords: sc.maxBatchRecords,
            maxInFlightBatches: sc.maxInFlightBatches,
            retry: sc.retry,
          },
          {
            spool: this.spool,
            deadLetter,
            clock: this.clock,
            log,
            stats: this.stats,
            ...(this.o.random ? { random: this.o.random } : {}),
          },
        ),
      );
    }
    this.dispatcher = new Dispatcher(this.spool, workers, log);
    await this.dispatcher.start();
    await this.identity.start();
    await this.source.start();
    const requestsPerSecond = 1000 / Math.max(1, config.pollIntervalMs, config.imds.minRequestSpacingMs);
    if (requestsPerSecond > 2) {
      log.warn(
        { requestsPerSecond },
        'polling faster than 2 requests/s; IMDS allows 5 per VM for every process together',
      );
    }
    if (config.statsIntervalMs > 0) {
      this.statsTimer = setInterval(
        () => log.info({ stats: this.stats.snapshot() }, 'stats'),
        config.statsIntervalMs,
      );
      this.statsTimer.unref();
    }
    log.info(
      {
        imds: config.imds.baseUrl,
        apiVersion: config.imds.apiVersion,
        pollIntervalMs: config.pollIntervalMs,
        sinks: config.sinks.map((s) => s.name),
        stateDir: config.stateDir,
        version: AGENT_VERSION,
      },
      'scheduled-events-forwarder started',
    );
  }

  /** Records are built with the VM identity, or without it once identityWaitMs has passed or on shutdown. */
  private async onChanges(changes: readonly EventChange[], final: boolean): Promise<boolean> {
    let vm = this.identity.current;
    if (!vm) {
      if (!final && this.clock.now() - this.startedAt < this.o.config.imds.identityWaitMs) return false;
      if (!this.warnedNoIdentity) {
        this.o.log.warn('VM identity still unknown; forwarding records without it (VmId and names empty)');
        this.warnedNoIdentity = true;
      }
      vm = UNKNOWN_VM_IDENTITY;
    }
    const records = changes.map((c) => buildRecord(c, vm, AGENT_VERSION, this.hostKey));
    await this.spool!.append(records);
    return true;
  }

  /**
   * Stop polling, drain the spool to the sinks until the deadline, close sinks. Idempotent.
   * Resolves true when every sink caught up before the deadline.
   */
  stop(): Promise<boolean> {
    this.stopping ??= this.shutdown();
    return this.stopping;
  }

  private async shutdown(): Promise<boolean> {
    const { config, log } = this.o;
    const deadline = this.clock.now() + config.shutdownTimeoutMs;
    if (this.statsTimer) clearInterval(this.statsTimer);
    // Stop both loops, then end the client so a request still waiting (up to 2 minutes for a
    // first answer) does not hold the shutdown.
    const polling = this.source.stopPolling();
    const refreshing = this.identity.stopRefreshing();
    await this.client.close();
    await polling;
    await refreshing;
    const caughtUp = (await this.dispatcher?.drain(deadline)) ?? true;
    for (const sink of this.sinks) {
      await sink.close().catch((err) => log.warn({ err }, 'sink close failed'));
    }
    await this.spool?.close();
    log.info({ stats: this.stats.snapshot(), caughtUp }, 'scheduled-events-forwarder stopped');
    return caughtUp;
  }
}
