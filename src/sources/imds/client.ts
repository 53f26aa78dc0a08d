import { createRequire } from 'node:module';
import type { Agent as UndiciAgent, Dispatcher } from 'undici';
import type { Clock } from '../../clock.ts';
import { parseRetryAfterMs } from '../../retry/backoff.ts';
import { AGENT_VERSION } from '../../version.ts';
import { parseScheduledEventsDocument, type ScheduledEventsDocument } from './document.ts';

const USER_AGENT = `scheduled-events-forwarder/${AGENT_VERSION}`;

// Only undici's connection pool and its request API. The package entry point also loads fetch,
// WebSocket, caches and mocks: about 13 MB more RSS on every VM for code the agent never runs
// (npm run bench). The paths are pinned with the exact undici version in package.json.
const requireCjs = createRequire(import.meta.url);
const Agent = requireCjs('undici/lib/dispatcher/agent') as typeof UndiciAgent;
const undiciRequest = requireCjs('undici/lib/api/api-request') as (
  this: Dispatcher,
  opts: Dispatcher.RequestOptions,
) => Promise<Dispatcher.ResponseData>;

class ImdsTimeout extends Error {
  override name = 'TimeoutError';
}

/** Why an IMDS request did not yield a usable answer. One kind per distinct operator action. */
export type ImdsFailureKind = 'http-status' | 'connection' | 'timeout' | 'invalid-json' | 'invalid-document';

export interface ImdsFailure {
  readonly kind: ImdsFailureKind;
  readonly message: string;
  readonly status?: number;
  readonly code?: string;
  readonly retryAfterMs?: number;
}

export type ImdsResult<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly failure: ImdsFailure };

export interface ImdsClientOptions {
  readonly baseUrl: string;
  readonly scheduledEventsApiVersion: string;
  readonly computeApiVersion: string;
  /** Spacing between any two requests, so the agent stays far below IMDS's 5 requests/s per VM. */
  readonly minRequestSpacingMs: number;
  readonly clock: Clock;
}

/**
 * IMDS over plain HTTP with keep-alive. It has its own undici Agent and passes it on every call:
 * no global dispatcher, HTTP(S)_PROXY or NODE_USE_ENV_PROXY can route IMDS through a proxy.
 */
export class ImdsClient {
  private readonly agent: UndiciAgent;
  private readonly opts: ImdsClientOptions;
  private nextSlotAt = 0;

  constructor(opts: ImdsClientOptions) {
    this.opts = opts;
    this.agent = new Agent({
      keepAliveTimeout: 30_000,
      keepAliveMaxTimeout: 60_000,
      connections: 2,
      pipelining: 1,
    });
  }

  get baseUrl(): string {
    return this.opts.baseUrl;
  }

  async getScheduledEvents(
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<ImdsResult<ScheduledEventsDocument>> {
    const res = await this.call(
      'GET',
      '/metadata/scheduledevents',
      this.opts.scheduledEventsApiVersion,
      timeoutMs,
      signal,
    );
    if (!res.ok) return res;
    const parsed = parseScheduledEventsDocument(res.value);
    if (!parsed.ok) {
      return {
        ok: false,
        failure: { kind: 'invalid-document', message: `schema-invalid document: ${parsed.reason}` },
      };
    }
    return { ok: true, value: parsed.document };
  }

  async getInstanceCompute(timeoutMs: number, signal?: AbortSignal): Promise<ImdsResult<unknown>> {
    return this.call('GET', '/metadata/instance/compute', this.opts.computeApiVersion, timeoutMs, signal);
  }

  /** Approves (starts) events. Approval affects every VM in the events' Resources. */
  async startEvents(eventIds: readonly string[], timeoutMs: number): Promise<ImdsResult<unknown>> {
    const body = JSON.stringify({ StartRequests: eventIds.map((EventId) => ({ EventId })) });
    return this.call(
      'POST',
      '/metadata/scheduledevents',
      this.opts.scheduledEventsApiVersion,
      timeoutMs,
      undefined,
      body,
    );
  }

  async close(): Promise<void> {
    await this.agent.close();
  }

  private async waitForSlot(): Promise<void> {
    const now = this.opts.clock.now();
    const at = Math.max(now, this.nextSlotAt);
    this.nextSlotAt = at + this.opts.minRequestSpacingMs;
    if (at > now) await this.opts.clock.sleep(at - now);
  }

  private async call(
    method: 'GET' | 'POST',
    path: string,
    apiVersion: string,
    timeoutMs: number,
    stopSignal?: AbortSignal,
    body?: string,
  ): Promise<ImdsResult<unknown>> {
    await this.waitForSlot();
    const url = new URL(path, this.opts.baseUrl);
    url.searchParams.set('api-version', apiVersion);
    const headers: Record<string, string> = { Metadata: 'true', 'user-agent': USER_AGENT };
    if (body !== undefined) headers['content-type'] = 'application/json';
    // One plain timer per request, cleared when the answer is in: AbortSignal.timeout would stay
    // armed after every successful poll and fire later for nothing.
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(new ImdsTimeout(`no answer within ${timeoutMs} ms`)), timeoutMs);
    const onStop = () => abort.abort(new ImdsTimeout('stopped'));
    stopSignal?.addEventListener('abort', onStop, { once: true });
    let status: number;
    let text: string;
    let retryAfter: string | string[] | undefined;
    try {
      const res = await undiciRequest.call(this.agent, {
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        method,
        headers,
        body,
        signal: abort.signal,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      });
      status = res.statusCode;
      retryAfter = res.headers['retry-after'];
      text = await res.body.text();
    } catch (err) {
      return { ok: false, failure: networkFailure(err, timeoutMs) };
    } finally {
      clearTimeout(timer);
      stopSignal?.removeEventListener('abort', onStop);
    }
    if (status < 200 || status >= 300) {
      const retryAfterMs = parseRetryAfterMs(retryAfter, this.opts.clock.now());
      return {
        ok: false,
        failure: {
          kind: 'http-status',
          status,
          message: `HTTP ${status} from ${method} ${path}: ${text.slice(0, 200).trim() || '(empty body)'}`,
          ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
        },
      };
    }
    // Approvals answer 200 with an empty body.
    if (method === 'POST' && text.trim() === '') return { ok: true, value: null };
    try {
      return { ok: true, value: JSON.parse(text) as unknown };
    } catch {
      return {
        ok: false,
        failure: {
          kind: 'invalid-json',
          message: `non-JSON body from ${method} ${path}: ${JSON.stringify(text.slice(0, 80))}`,
        },
      };
    }
  }
}

function networkFailure(err: unknown, timeoutMs: number): ImdsFailure {
  const e = err as { name?: string; code?: string; message?: string; cause?: { code?: string } };
  const code = e.code ?? e.cause?.code;
  if (
    e.name === 'TimeoutError' ||
    e.name === 'AbortError' ||
    code === 'UND_ERR_HEADERS_TIMEOUT' ||
    code === 'UND_ERR_BODY_TIMEOUT' ||
    code === 'UND_ERR_CONNECT_TIMEOUT'
  ) {
    return { kind: 'timeout', message: `no answer within ${timeoutMs} ms`, code: code ?? 'TIMEOUT' };
  }
  return {
    kind: 'connection',
    message: `connection failed: ${code ?? ''} ${e.message ?? String(err)}`.trim(),
    ...(code ? { code } : {}),
  };
}

/** One key per kind of failure, for rate-limited logging. */
export function failureSignature(f: ImdsFailure): string {
  return [f.kind, f.status ?? '', f.code ?? ''].join(':');
}
