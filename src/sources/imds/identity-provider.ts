import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Clock } from '../../clock.ts';
import { writeFileAtomic } from '../../fs-durable.ts';
import type { Logger } from '../../log.ts';
import { type BackoffPolicy, backoffDelayMs } from '../../retry/backoff.ts';
import { FailureLog } from '../../failure-log.ts';
import { failureSignature, type ImdsClient } from './client.ts';
import {
  identityFromCached,
  identityFromCompute,
  isKnownIdentity,
  sameIdentity,
  type VmIdentity,
} from './vm-identity.ts';

export interface IdentityProviderOptions {
  readonly client: ImdsClient;
  readonly stateDir: string;
  readonly clock: Clock;
  readonly log: Logger;
  readonly refreshIntervalMs: number;
  readonly requestTimeoutMs: number;
  readonly backoff: BackoffPolicy;
}

const CACHE_FILE = 'vm-identity.json';

/**
 * Reads /metadata/instance/compute at start and refreshes it (tags and names change). The last
 * identity is cached in the state directory so RecordIds after a restart use the same VmId even
 * while IMDS is still slow to answer.
 */
export class IdentityProvider {
  private readonly o: IdentityProviderOptions;
  private readonly failures: FailureLog;
  private readonly stop = new AbortController();
  private identity: VmIdentity | null = null;
  private loop: Promise<void> | null = null;
  private fromImds = false;

  constructor(options: IdentityProviderOptions) {
    this.o = options;
    this.failures = new FailureLog(options.log, 'IMDS instance compute');
  }

  get current(): VmIdentity | null {
    return this.identity;
  }

  async start(): Promise<void> {
    this.identity = await this.readCache();
    this.loop = this.run();
  }

  async stopRefreshing(): Promise<void> {
    this.stop.abort();
    await this.loop;
  }

  private get cachePath(): string {
    return join(this.o.stateDir, CACHE_FILE);
  }

  private async readCache(): Promise<VmIdentity | null> {
    try {
      const cached = JSON.parse(await readFile(this.cachePath, 'utf8')) as {
        identity?: Record<string, unknown>;
      };
      const id = identityFromCached(cached.identity);
      return isKnownIdentity(id) ? id : null;
    } catch {
      return null;
    }
  }

  private async run(): Promise<void> {
    let attempt = 0;
    while (!this.stop.signal.aborted) {
      const res = await this.o.client.getInstanceCompute(this.o.requestTimeoutMs);
      if (this.stop.signal.aborted) return;
      const now = this.o.clock.now();
      let delay = this.o.refreshIntervalMs;
      if (res.ok && isKnownIdentity(identityFromCompute(res.value))) {
        this.failures.success(now);
        attempt = 0;
        await this.accept(res.value);
      } else {
        const message = res.ok ? 'compute document names no VM (no vmId, no name)' : res.failure.message;
        this.failures.failure(now, res.ok ? 'empty-compute' : failureSignature(res.failure), message);
        // Until the first identity arrives, retry soon: records wait for it (up to identityWaitMs).
        if (!this.fromImds) delay = backoffDelayMs(this.o.backoff, attempt++);
      }
      await this.o.clock.sleep(delay, this.stop.signal);
    }
  }

  private async accept(compute: unknown): Promise<void> {
    const id = identityFromCompute(compute);
    const changed = !this.identity || !sameIdentity(this.identity, id);
    this.identity = id;
    if (!this.fromImds) this.o.log.info({ vmId: id.VmId, vmName: id.VmName }, 'VM identity read from IMDS');
    this.fromImds = true;
    if (!changed) return;
    try {
      // Only the identity fields are cached: the compute document also holds tags and user names.
      await writeFileAtomic(this.cachePath, `${JSON.stringify({ identity: id })}\n`);
    } catch (err) {
      this.o.log.warn({ err, path: this.cachePath }, 'could not cache VM identity');
    }
  }
}
