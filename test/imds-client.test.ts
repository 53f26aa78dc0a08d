import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { EnvHttpProxyAgent, getGlobalDispatcher, setGlobalDispatcher, fetch as undiciFetch } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../src/clock.ts';
import { ImdsSimulator } from '../src/simulator/server.ts';
import { ImdsClient } from '../src/sources/imds/client.ts';
import { RecordingClock } from './helpers/clock.ts';
import { cli } from './helpers/process.ts';

let sim: ImdsSimulator;
beforeAll(async () => {
  sim = new ImdsSimulator({ maxRequestsPerSecond: 10_000 });
  await sim.start();
});
afterAll(() => sim.stop());

const clients: ImdsClient[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
});

function client(over: Partial<ConstructorParameters<typeof ImdsClient>[0]> = {}): ImdsClient {
  const c = new ImdsClient({
    baseUrl: sim.url,
    scheduledEventsApiVersion: '2020-07-01',
    computeApiVersion: '2021-02-01',
    minRequestSpacingMs: 0,
    clock: systemClock,
    ...over,
  });
  clients.push(c);
  return c;
}

describe('ImdsClient against the simulator', () => {
  it('gets the document with Metadata: true and api-version', async () => {
    const res = await client().getScheduledEvents(1000);
    expect(res).toEqual({ ok: true, value: { DocumentIncarnation: 1, Events: [] } });
  });

  it('reads instance compute', async () => {
    const res = await client().getInstanceCompute(1000);
    expect(res.ok && (res.value as { name: string }).name).toBe('sim-vm-0');
  });

  it.each([
    [{ kind: 'status', status: 400 } as const, 'http-status', 400],
    [{ kind: 'status', status: 404 } as const, 'http-status', 404],
    [{ kind: 'status', status: 405 } as const, 'http-status', 405],
    [{ kind: 'status', status: 410 } as const, 'http-status', 410],
    [{ kind: 'status', status: 429, retryAfter: '3' } as const, 'http-status', 429],
    [{ kind: 'status', status: 500 } as const, 'http-status', 500],
    [{ kind: 'status', status: 503 } as const, 'http-status', 503],
    [{ kind: 'reset' } as const, 'connection', undefined],
    [{ kind: 'hang', ms: 300 } as const, 'timeout', undefined],
    [{ kind: 'non-json' } as const, 'invalid-json', undefined],
    [{ kind: 'invalid-schema' } as const, 'invalid-document', undefined],
  ])('classifies %o as %s', async (fault, kind, status) => {
    sim.injectFault(fault);
    const res = await client().getScheduledEvents(100);
    expect(res.ok).toBe(false);
    if (res.ok) return;
    expect(res.failure.kind).toBe(kind);
    expect(res.failure.status).toBe(status);
    expect(res.failure.message.length).toBeGreaterThan(0);
    if (status === 429) expect(res.failure.retryAfterMs).toBe(3000);
    // The next request is answered normally: one fault, one failed request.
    expect((await client().getScheduledEvents(1000)).ok).toBe(true);
  });

  it('reports connection refused', async () => {
    const dead = createServer();
    await new Promise<void>((r) => dead.listen(0, '127.0.0.1', () => r()));
    const port = (dead.address() as AddressInfo).port;
    await new Promise<void>((r) => dead.close(() => r()));
    const res = await client({ baseUrl: `http://127.0.0.1:${port}` }).getScheduledEvents(500);
    expect(!res.ok && res.failure).toMatchObject({ kind: 'connection', code: 'ECONNREFUSED' });
  });

  it('spaces requests so that even a burst stays below the IMDS rate limit', async () => {
    const clock = new RecordingClock();
    const c = client({ minRequestSpacingMs: 250, clock });
    const t0 = clock.now();
    await Promise.all(Array.from({ length: 5 }, () => c.getScheduledEvents(1000)));
    // Each request after the first waits for its own slot, 250 ms after the previous one: 4 per second at most.
    expect(clock.sleeps).toEqual([250, 250, 250, 250]);
    expect(clock.now() - t0).toBe(1000);
  });

  it('approves events with StartRequests', async () => {
    const ev = sim.board.schedule({ EventType: 'Freeze' }, Date.now() + 900_000, 'sim-vm-0');
    const res = await client().startEvents([ev.EventId], 1000);
    expect(res.ok).toBe(true);
    expect(sim.board.find(ev.EventId)?.EventStatus).toBe('Started');
    sim.board.remove(ev.EventId);
  });
});

describe('IMDS is never reached through a proxy', () => {
  let proxy: Server;
  let proxyHits = 0;
  let proxyUrl = '';
  const saved = { ...process.env };
  const savedDispatcher = getGlobalDispatcher();

  beforeAll(async () => {
    // A loopback "proxy" that answers everything itself, so any request routed through it is visible.
    proxy = createServer((_req, res) => {
      proxyHits++;
      res.writeHead(502).end('via proxy');
    });
    proxy.on('connect', (_req, socket) => {
      proxyHits++;
      socket.end('HTTP/1.1 502 Bad Gateway\r\n\r\n');
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', () => r()));
    proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    process.env = saved;
    setGlobalDispatcher(savedDispatcher);
    await new Promise<void>((r) => proxy.close(() => r()));
  });

  it('ignores HTTP_PROXY/HTTPS_PROXY/NO_PROXY and a proxying global dispatcher', async () => {
    Object.assign(process.env, {
      HTTP_PROXY: proxyUrl,
      http_proxy: proxyUrl,
      HTTPS_PROXY: proxyUrl,
      https_proxy: proxyUrl,
      ALL_PROXY: proxyUrl,
    });
    delete process.env.NO_PROXY;
    delete process.env.no_proxy;
    setGlobalDispatcher(new EnvHttpProxyAgent());
    // The setup is effective: a plain fetch does go through the proxy...
    proxyHits = 0;
    const viaProxy = await undiciFetch(`${sim.url}/metadata/scheduledevents?api-version=2020-07-01`, {
      headers: { Metadata: 'true' },
    });
    expect(viaProxy.status).toBe(502);
    expect(proxyHits).toBe(1);
    // ...and the IMDS client does not.
    const res = await client().getScheduledEvents(1000);
    expect(res.ok).toBe(true);
    expect(proxyHits).toBe(1);
  });

  it('the CLI probe (`once`) ignores the proxy variables, with NODE_USE_ENV_PROXY set too', async () => {
    proxyHits = 0;
    const out = await cli(['once', '--timeout-ms', '2000'], {
      ...(saved as Record<string, string>),
      SEF_IMDS_BASE_URL: sim.url,
      HTTP_PROXY: proxyUrl,
      http_proxy: proxyUrl,
      HTTPS_PROXY: proxyUrl,
      NODE_USE_ENV_PROXY: '1',
      NO_PROXY: '',
    });
    expect(out.code).toBe(0);
    expect(JSON.parse(out.stdout)).toMatchObject({
      DocumentIncarnation: expect.any(Number),
      Events: expect.any(Array),
    });
    expect(proxyHits).toBe(0);
  });
});
