import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { EventBoard, type EventSpec } from './board.ts';
import { defaultCompute } from './compute.ts';

/** A fault the simulator plays instead of its normal answer, for the next `count` requests. */
export type Fault =
  | {
      readonly kind: 'status';
      readonly status: number;
      readonly retryAfter?: string;
      readonly body?: string;
      readonly count?: number;
    }
  | { readonly kind: 'reset'; readonly count?: number }
  | { readonly kind: 'hang'; readonly ms: number; readonly count?: number }
  | { readonly kind: 'non-json'; readonly count?: number }
  | { readonly kind: 'invalid-schema'; readonly count?: number };

export interface SimulatorOptions {
  readonly host?: string;
  readonly port?: number;
  readonly compute?: Readonly<Record<string, unknown>>;
  /** Simulated seconds per real second: a 15-minute NotBefore plays in 15 / speed minutes. */
  readonly speed?: number;
  /** IMDS allows 5 requests per second per VM; tests that poll faster raise it. */
  readonly maxRequestsPerSecond?: number;
  readonly now?: () => number;
}

const SUPPORTED_API_VERSIONS = [
  '2017-03-01',
  '2017-08-01',
  '2017-11-01',
  '2019-01-01',
  '2019-04-01',
  '2019-08-01',
  '2020-07-01',
];
const COMPUTE_API_VERSIONS = [
  '2017-04-02',
  '2018-10-01',
  '2019-06-01',
  '2020-09-01',
  '2021-02-01',
  '2021-12-13',
  '2023-07-01',
  '2025-04-07',
];
const IDENTITY_API_VERSIONS = ['2018-02-01', '2019-08-01'];

type Op =
  | { op: 'schedule'; event?: EventSpec; notBeforeInSeconds?: number }
  | { op: 'appear-started'; event?: EventSpec }
  | { op: 'start'; eventId: string }
  | {
      op: 'update';
      eventId: string;
      notBeforeInSeconds?: number;
      Resources?: string[];
      Description?: string;
      DurationInSeconds?: number;
    }
  | { op: 'remove'; eventId: string }
  | { op: 'clear' }
  | { op: 'reset-incarnation'; clearEvents?: boolean };

export type SimulatorOperation = Op;

/**
 * The IMDS Scheduled Events API as Azure documents it, plus instance compute and the
 * managed-identity token endpoint, on loopback. `/simulator/*` is its own control API.
 */
export class ImdsSimulator {
  readonly board = new EventBoard();
  compute: Record<string, unknown>;
  private readonly server: Server;
  private readonly o: SimulatorOptions;
  private readonly startedRealMs: number;
  private readonly faults: { fault: Fault; left: number }[] = [];
  private readonly recent: number[] = [];
  private servedWaiters: { target: number; resolve: () => void }[] = [];
  /** Successful GETs of the scheduled events document. */
  servedDocuments = 0;
  requests = 0;
  /** Requests per User-Agent, so a benchmark can tell its clients apart. */
  readonly requestsByUserAgent = new Map<string, number>();
  readonly approvals: string[] = [];
  private readonly sockets = new Set<import('node:net').Socket>();

  constructor(o: SimulatorOptions = {}) {
    this.o = o;
    this.compute = defaultCompute(o.compute);
    this.startedRealMs = this.realNow();
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((err) => {
        if (!res.headersSent) json(res, 500, { error: String(err) });
        else res.destroy();
      });
    });
    this.server.keepAliveTimeout = 60_000;
    this.server.on('connection', (s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
  }

  private realNow(): number {
    return this.o.now ? this.o.now() : Date.now();
  }

  /** Simulated wall-clock time; runs `speed` times faster than real time. */
  simNow(): number {
    const real = this.realNow();
    return this.startedRealMs + (real - this.startedRealMs) * (this.o.speed ?? 1);
  }

  get vmName(): string {
    return String(this.compute.name ?? '');
  }

  async start(): Promise<string> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.o.port ?? 0, this.o.host ?? '127.0.0.1', () => resolve());
    });
    return this.url;
  }

  get url(): string {
    const a = this.server.address() as AddressInfo;
    const host = a.family === 'IPv6' ? `[${a.address}]` : a.address;
    return `http://${host}:${a.port}`;
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  injectFault(fault: Fault): void {
    this.faults.push({ fault, left: fault.count ?? 1 });
  }

  /** Resolves once `n` more documents have been served than now (n = 2 proves one was fully processed). */
  waitForServed(n: number): Promise<void> {
    const target = this.servedDocuments + n;
    return new Promise((resolve) => this.servedWaiters.push({ target, resolve }));
  }

  apply(op: Op): unknown {
    const b = this.board;
    switch (op.op) {
      case 'schedule':
        return b.schedule(op.event ?? {}, this.simNow() + (op.notBeforeInSeconds ?? 900) * 1000, this.vmName);
      case 'appear-started':
        return b.appearStarted(op.event ?? {}, this.vmName);
      case 'start':
        return must(b.start(op.eventId), op.eventId);
      case 'update':
        return must(
          b.update(op.eventId, {
            ...(op.notBeforeInSeconds !== undefined
              ? { notBeforeMs: this.simNow() + op.notBeforeInSeconds * 1000 }
              : {}),
            ...(op.Resources
              ? { Resources: op.Resources.map((r) => (r === '$self' ? this.vmName : r)) }
              : {}),
            ...(op.Description !== undefined ? { Description: op.Description } : {}),
            ...(op.DurationInSeconds !== undefined ? { DurationInSeconds: op.DurationInSeconds } : {}),
          }),
          op.eventId,
        );
      case 'remove':
        return must(b.remove(op.eventId), op.eventId);
      case 'clear':
        b.clear();
        return true;
      case 'reset-incarnation':
        b.resetIncarnation(op.clearEvents ?? true);
        return true;
      default:
        throw new SimulatorRequestError(`unknown op ${JSON.stringify((op as { op: unknown }).op)}`);
    }
  }

  private overRateLimit(): boolean {
    const now = this.realNow();
    while (this.recent.length && now - this.recent[0]! >= 1000) this.recent.shift();
    this.recent.push(now);
    return this.recent.length > (this.o.maxRequestsPerSecond ?? 5);
  }

  private takeFault(): Fault | null {
    const head = this.faults[0];
    if (!head) return null;
    if (--head.left <= 0) this.faults.shift();
    return head.fault;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://simulator');
    const path = url.pathname.replace(/\/+$/, '') || '/';
    const body = await readBody(req);
    if (path.startsWith('/simulator')) return this.control(req.method ?? 'GET', path, body, res);

    this.requests++;
    const ua = String(req.headers['user-agent'] ?? '');
    this.requestsByUserAgent.set(ua, (this.requestsByUserAgent.get(ua) ?? 0) + 1);
    // IMDS refuses anything that looks proxied, and anything without the Metadata header.
    if (req.headers['x-forwarded-for'] !== undefined) {
      return json(res, 400, { error: 'Bad request. Request contains X-Forwarded-For header' });
    }
    if (req.headers.metadata !== 'true') {
      return json(res, 400, { error: 'Bad request. Required metadata header not specified' });
    }
    if (this.overRateLimit()) return json(res, 429, { error: 'Too many requests' });

    if (path === '/metadata/scheduledevents') return this.scheduledEvents(req, url, body, res);
    if (path === '/metadata/instance/compute') {
      if (req.method !== 'GET') return json(res, 405, { error: 'Method not allowed' });
      if (!checkApiVersion(url, res, COMPUTE_API_VERSIONS)) return;
      return json(res, 200, this.compute);
    }
    if (path === '/metadata/identity/oauth2/token') return this.token(req, url, res);
    return json(res, 404, { error: 'Not found' });
  }

  private async scheduledEvents(
    req: IncomingMessage,
    url: URL,
    body: string,
    res: ServerResponse,
  ): Promise<void> {
    if (req.method !== 'GET' && req.method !== 'POST') return json(res, 405, { error: 'Method not allowed' });
    if (!checkApiVersion(url, res, SUPPORTED_API_VERSIONS)) return;
    const apiVersion = url.searchParams.get('api-version')!;
    if (req.method === 'POST') return this.approve(body, res);

    const fault = this.takeFault();
    if (fault) {
      switch (fault.kind) {
        case 'status':
          if (fault.retryAfter) res.setHeader('Retry-After', fault.retryAfter);
          return json(res, fault.status, fault.body ?? { error: `simulated ${fault.status}` });
        case 'reset':
          req.socket.destroy();
          return;
        case 'hang':
          await new Promise((r) => setTimeout(r, fault.ms));
          if (req.socket.destroyed) return;
          break;
        case 'non-json':
          res.writeHead(200, { 'content-type': 'text/html' });
          res.end('<html><body>Service Unavailable</body></html>');
          return;
        case 'invalid-schema':
          return json(res, 200, { DocumentIncarnation: 'seven', Events: {} });
      }
    }
    this.board.tick(this.simNow());
    json(res, 200, this.board.document(apiVersion));
    this.servedDocuments++;
    this.servedWaiters = this.servedWaiters.filter((w) => {
      if (this.servedDocuments < w.target) return true;
      w.resolve();
      return false;
    });
  }

  /** POST StartRequests: 200 for any well-formed EventId, even unknown or already started ones. */
  private approve(body: string, res: ServerResponse): void {
    let ids: string[];
    try {
      const parsed = JSON.parse(body) as { StartRequests?: { EventId?: unknown }[] };
      if (!Array.isArray(parsed.StartRequests) || parsed.StartRequests.length === 0)
        throw new Error('no StartRequests');
      ids = parsed.StartRequests.map((r) => {
        if (typeof r?.EventId !== 'string' || !GUID.test(r.EventId)) throw new Error('bad EventId');
        return r.EventId;
      });
    } catch {
      return json(res, 400, { error: 'Bad request. Malformed StartRequests payload' });
    }
    for (const id of ids) {
      this.approvals.push(id);
      this.board.start(id);
    }
    res.writeHead(200).end();
  }

  private token(req: IncomingMessage, url: URL, res: ServerResponse): void {
    if (req.method !== 'GET') return json(res, 405, { error: 'Method not allowed' });
    if (!checkApiVersion(url, res, IDENTITY_API_VERSIONS)) return;
    const resource = url.searchParams.get('resource');
    if (!resource) {
      return json(res, 400, {
        error: 'invalid_request',
        error_description: "Required query variable 'resource' is missing",
      });
    }
    const now = Math.floor(this.realNow() / 1000);
    json(res, 200, {
      access_token: `sim.${randomBytes(24).toString('base64url')}`,
      refresh_token: '',
      expires_in: '86399',
      expires_on: String(now + 86_399),
      ext_expires_in: '86399',
      not_before: String(now),
      resource,
      token_type: 'Bearer',
      client_id: url.searchParams.get('client_id') ?? '00000000-0000-4000-8000-0000000000aa',
    });
  }

  private control(method: string, path: string, body: string, res: ServerResponse): void {
    try {
      if (method === 'GET' && path === '/simulator/state') {
        return json(res, 200, {
          incarnation: this.board.incarnation,
          document: this.board.document('2020-07-01'),
          servedDocuments: this.servedDocuments,
          requests: this.requests,
          approvals: this.approvals,
          simNow: new Date(this.simNow()).toISOString(),
        });
      }
      if (method === 'POST' && path === '/simulator/events') {
        const result = this.apply(parseJson(body) as Op);
        return json(res, 200, { ok: true, result, incarnation: this.board.incarnation });
      }
      if (method === 'POST' && path === '/simulator/faults') {
        this.injectFault(parseJson(body) as Fault);
        return json(res, 200, { ok: true });
      }
      return json(res, 404, { error: 'unknown simulator endpoint' });
    } catch (err) {
      return json(res, 400, { error: (err as Error).message });
    }
  }
}

const GUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

export class SimulatorRequestError extends Error {}

function must(found: boolean, eventId: string): true {
  if (!found) throw new SimulatorRequestError(`no event with EventId ${eventId}`);
  return true;
}

function parseJson(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    throw new SimulatorRequestError('expected a JSON body');
  }
}

function checkApiVersion(url: URL, res: ServerResponse, supported: readonly string[]): boolean {
  const v = url.searchParams.get('api-version');
  if (!v) {
    json(res, 400, {
      error:
        'Bad request. api-version was not specified in the request. For more information refer to aka.ms/azureimds',
      'newest-versions': supported.slice(-3).reverse(),
    });
    return false;
  }
  if (!supported.includes(v)) {
    json(res, 400, {
      error: 'Bad request. api-version is invalid or was not specified in the request.',
      'newest-versions': supported.slice(-3).reverse(),
    });
    return false;
  }
  return true;
}

function json(res: ServerResponse, status: number, body: unknown): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > 1024 * 1024) throw new SimulatorRequestError('body too large');
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}
