import { createRequire } from 'node:module';
import type { Dispatcher, Agent as UndiciAgent } from 'undici';
import type { Clock } from '../../clock.ts';
import { parseRetryAfterMs } from '../../retry/backoff.ts';
import { AGENT_VERSION } from '../../version.ts';
import { parseScheduledEventsDocument, type ScheduledEventsDocument } from './document.ts';

const USER_AGENT = `scheduled-events-forwarder/${AGENT_VERSION}`;
class TimeoutError extends Error {
  override name = 'TimeoutError';
  constructor(ms: number) {
    super(`no answer within ${ms} ms`);
  }
}

const GET_HEADERS = Object.freeze({ Metadata: 'true', 'user-agent': USER_AGENT });
const POST_HEADERS = Object.freeze({ ...GET_HEADERS, 'content-type': 'application/json' });

// Only undici's connection pool and its request API. The package entry point also loads fetch,
// WebSocket, caches and mocks: about 13 MB more RSS on every VM for code the agent never runs
// (npm run bench). The paths are pinned with the exact undici version in package.json.
const requireCjs = createRequire(import.meta.url);
const Agent = requireCjs('undici/lib/dispatcher/agent') as typeof UndiciAgent;
const undiciRequest = requireCjs('undici/lib/api/api-request') as (
  this: Dispatcher,
  opts: Dispatcher.RequestOptions,
) => Promise<Dispatcher.ResponseData>;

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
  { readonly ok: true; readonly value: T } | { readonly ok: false; readonly failure: ImdsFailure };

export interface ImdsClientOptions {
  readonly baseUrl: string;
  readonly scheduledEventsApiVersion: string;
  readonly computeApiVersion: string;
  /** Spacing between any two requests, so the agent stays far below IMDS's 5 requests/s per VM. */
  readonly minRequestSpacingMs: number;
  /** A link-local address connects at once or never; the enabling delay is in the answer, not here. */
  readonly connectTimeoutMs?: number;
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
  private readonly origin: string;
  private readonly scheduledEventsPath: string;
  private readonly computePath: string;

  constructor(opts: ImdsClientOptions) {
    this.opts = opts;
    // Built once: the poll path is the same every second.
    const base = new URL(opts.baseUrl);
    const prefix = base.pathname.replace(/\/+$/, '');
    this.origin = base.origin;
    this.scheduledEventsPath = `${prefix}/metadata/scheduledevents?api-version=${encodeURIComponent(opts.scheduledEventsApiVersion)}`;
    this.computePath = `${prefix}/metadata/instance/compute?api-version=${encodeURIComponent(opts.computeApiVersion)}`;
    this.agent = new Agent({
      keepAliveTimeout: 30_000,
      keepAliveMaxTimeout: 60_000,
      connections: 2,
      pipelining: 1,
    });
  }

  async getScheduledEvents(timeoutMs: number): Promise<ImdsResult<ScheduledEventsDocument>> {
    const res = await this.call('GET', this.scheduledEventsPath, timeoutMs);
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

  async getInstanceCompute(timeoutMs: number): Promise<ImdsResult<unknown>> {
    return this.call('GET', this.computePath, timeoutMs);
  }

  /** Approves (starts) events. Approval affects every VM in the events' Resources. */
  async startEvents(eventIds: readonly string[], timeoutMs: number): Promise<ImdsResult<unknown>> {
    const body = JSON.stringify({ StartRequests: eventIds.map((EventId) => ({ EventId })) });
    return this.call('POST', this.scheduledEventsPath, timeoutMs, body);
  }

  /** Ends the client; a request still waiting (the 2-minute first answer, say) fails at once. */
  async close(): Promise<void> {
    await this.agent.destroy();
  }

  private async waitForSlot(): Promise<void> {
    const now = this.opts.clock.now();
    const at = Math.max(now, this.nextSlotAt);
    this.nextSlotAt = at + this.opts.minRequestSpacingMs;
    if (at > now) await this.opts.clock.sleep(at - now);
  }

  private async call(
    method: 'GET' | 'POST',
    pathAndQuery: string,
    timeoutMs: number,
    body?: string,
  ): Promise<ImdsResult<unknown>> {
    await this.waitForSlot();
    const headers: Record<string, string> = body === undefined ? GET_HEADERS : POST_HEADERS;
    // A native timer: undici's own header timer ticks in half seconds above 1 s and would let a
    // hung request run past the poll interval. close() ends a waiting request on shutdown.
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(new TimeoutError(timeoutMs)), timeoutMs);
    let status: number;
    let text: string;
    let retryAfter: string | string[] | undefined;
    try {
      const res = await undiciRequest.call(this.agent, {
        origin: this.origin,
        path: pathAndQuery,
        method,
        headers,
        body,
        signal: abort.signal,
      });
      status = res.statusCode;
      retryAfter = res.headers['retry-after'];
      text = await res.body.text();
    } catch (err) {
      return { ok: false, failure: networkFailure(err, timeoutMs) };
    } finally {
      clearTimeout(timer);
    }
    const path = pathAndQuery.split('?')[0];
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
