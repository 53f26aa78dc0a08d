import { ManagedIdentityCredential } from '@azure/identity';
import { request } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ImdsSimulator } from '../src/simulator/server.ts';

let sim: ImdsSimulator;
beforeAll(async () => {
  sim = new ImdsSimulator({ maxRequestsPerSecond: 1000 });
  await sim.start();
});
afterAll(() => sim.stop());
afterEach(() => {
  sim.board.clear();
});

async function call(
  path: string,
  init: { method?: string; headers?: Record<string, string>; body?: string } = {},
) {
  const res = await request(`${sim.url}${path}`, {
    method: (init.method ?? 'GET') as 'GET',
    headers: { Metadata: 'true', ...init.headers },
    body: init.body,
  });
  const text = await res.body.text();
  return { status: res.statusCode, text, json: text ? (JSON.parse(text) as Record<string, unknown>) : null };
}

const SE = '/metadata/scheduledevents?api-version=2020-07-01';

describe('IMDS simulator: the Scheduled Events API as documented', () => {
  it('answers 400 without the Metadata header', async () => {
    const r = await call(SE, { headers: { Metadata: 'false' } });
    expect(r.status).toBe(400);
    expect(r.json!.error).toMatch(/metadata header/i);
  });

  it('rejects requests carrying X-Forwarded-For', async () => {
    expect((await call(SE, { headers: { 'X-Forwarded-For': '10.0.0.1' } })).status).toBe(400);
  });

  it('requires a supported api-version ({latest} is not supported)', async () => {
    expect((await call('/metadata/scheduledevents')).status).toBe(400);
    expect((await call('/metadata/scheduledevents?api-version=latest')).status).toBe(400);
    expect((await call('/metadata/scheduledevents?api-version=2017-08-01')).status).toBe(200);
  });

  it('returns 404 for unknown paths and 405 for other methods', async () => {
    expect((await call('/metadata/nothing?api-version=2020-07-01')).status).toBe(404);
    expect((await call(SE, { method: 'PUT' })).status).toBe(405);
  });

  it('bumps DocumentIncarnation on every change and plays the documented live migration', async () => {
    const inc0 = (await call(SE)).json!.DocumentIncarnation as number;
    const ev = sim.board.schedule(
      { EventId: 'C7061BAC-AFDC-4513-B24B-AA5F13A16123', EventType: 'Freeze', DurationInSeconds: 5 },
      Date.now() + 900_000,
      sim.vmName,
    );
    const scheduled = (await call(SE)).json!;
    expect(scheduled.DocumentIncarnation).toBe(inc0 + 1);
    expect((scheduled.Events as Record<string, unknown>[])[0]).toMatchObject({
      EventId: ev.EventId,
      EventStatus: 'Scheduled',
      EventType: 'Freeze',
      ResourceType: 'VirtualMachine',
      Resources: ['sim-vm-0'],
      EventSource: 'Platform',
      DurationInSeconds: 5,
      NotBefore: expect.stringMatching(/^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/),
    });
    sim.board.start(ev.EventId);
    const started = (await call(SE)).json!;
    expect(started.DocumentIncarnation).toBe(inc0 + 2);
    expect((started.Events as Record<string, unknown>[])[0]).toMatchObject({
      EventStatus: 'Started',
      NotBefore: '',
    });
    sim.board.remove(ev.EventId);
    expect((await call(SE)).json).toEqual({ DocumentIncarnation: inc0 + 3, Events: [] });
  });

  it('omits the fields an older api-version does not have', async () => {
    sim.board.schedule({ EventType: 'Reboot', Description: 'x' }, Date.now() + 900_000, sim.vmName);
    const ev = (
      (await call('/metadata/scheduledevents?api-version=2019-01-01')).json!.Events as Record<
        string,
        unknown
      >[]
    )[0]!;
    expect(Object.keys(ev).sort()).toEqual([
      'EventId',
      'EventStatus',
      'EventType',
      'NotBefore',
      'ResourceType',
      'Resources',
    ]);
    const ev2 = (
      (await call('/metadata/scheduledevents?api-version=2019-08-01')).json!.Events as Record<
        string,
        unknown
      >[]
    )[0]!;
    expect(ev2).toHaveProperty('EventSource');
    expect(ev2).not.toHaveProperty('DurationInSeconds');
  });

  it('starts events at NotBefore in compressed time', async () => {
    const fast = new ImdsSimulator({ speed: 10_000 });
    await fast.start();
    try {
      fast.apply({ op: 'schedule', event: { EventType: 'Freeze' }, notBeforeInSeconds: 900 });
      await new Promise((r) => setTimeout(r, 150)); // 150 ms real = 25 simulated minutes
      const res = await request(`${fast.url}${SE}`, { headers: { Metadata: 'true' } });
      const doc = (await res.body.json()) as { Events: { EventStatus: string; NotBefore: string }[] };
      expect(doc.Events[0]).toMatchObject({ EventStatus: 'Started', NotBefore: '' });
    } finally {
      await fast.stop();
    }
  });

  it('approves events by StartRequests: Scheduled -> Started; 200 for any valid EventId; 400 when malformed', async () => {
    const a = sim.board.schedule({ EventType: 'Freeze' }, Date.now() + 900_000, sim.vmName);
    const b = sim.board.schedule({ EventType: 'Reboot' }, Date.now() + 900_000, sim.vmName);
    const body = JSON.stringify({
      StartRequests: [{ EventId: a.EventId.toLowerCase() }, { EventId: b.EventId }],
    });
    expect((await call(SE, { method: 'POST', body })).status).toBe(200);
    expect(sim.board.find(a.EventId)!.EventStatus).toBe('Started');
    expect(sim.board.find(b.EventId)!.EventStatus).toBe('Started');
    const unknown = JSON.stringify({ StartRequests: [{ EventId: 'f020ba2e-3bc0-4c40-a10b-86575a9eabd5' }] });
    expect((await call(SE, { method: 'POST', body: unknown })).status).toBe(200);
    for (const bad of ['not json', '{}', '{"StartRequests":[{"EventId":"nope"}]}', '{"StartRequests":[]}']) {
      expect((await call(SE, { method: 'POST', body: bad })).status).toBe(400);
    }
    expect((await call(SE, { method: 'POST', body, headers: { Metadata: 'nope' } })).status).toBe(400);
  });

  it('answers 429 above 5 requests per second', async () => {
    const strict = new ImdsSimulator();
    await strict.start();
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 7; i++) {
        const res = await request(`${strict.url}${SE}`, { headers: { Metadata: 'true' } });
        await res.body.dump();
        statuses.push(res.statusCode);
      }
      expect(statuses.slice(0, 5)).toEqual([200, 200, 200, 200, 200]);
      expect(statuses.slice(5)).toEqual([429, 429]);
    } finally {
      await strict.stop();
    }
  });

  it('serves instance compute', async () => {
    const r = await call('/metadata/instance/compute?api-version=2021-02-01');
    expect(r.json).toMatchObject({
      name: 'sim-vm-0',
      vmId: expect.any(String),
      osProfile: { computerName: 'sim-vm-0' },
    });
  });

  it('lets events and faults be injected over HTTP while it runs', async () => {
    const add = await request(`${sim.url}/simulator/events`, {
      method: 'POST',
      body: JSON.stringify({ op: 'schedule', event: { EventType: 'Redeploy' }, notBeforeInSeconds: 600 }),
    });
    expect(add.statusCode).toBe(200);
    await add.body.dump();
    expect(((await call(SE)).json!.Events as { EventType: string }[])[0]!.EventType).toBe('Redeploy');
    const fault = await request(`${sim.url}/simulator/faults`, {
      method: 'POST',
      body: JSON.stringify({ kind: 'status', status: 503 }),
    });
    await fault.body.dump();
    expect((await call(SE)).status).toBe(503);
    expect((await call(SE)).status).toBe(200);
    const bad = await request(`${sim.url}/simulator/events`, {
      method: 'POST',
      body: JSON.stringify({ op: 'start', eventId: 'missing' }),
    });
    expect(bad.statusCode).toBe(400);
    await bad.body.dump();
  });
});

describe('IMDS simulator: managed-identity token endpoint', () => {
  it('serves tokens with and without a trailing slash, and requires resource', async () => {
    for (const path of ['/metadata/identity/oauth2/token', '/metadata/identity/oauth2/token/']) {
      const r = await call(`${path}?api-version=2018-02-01&resource=https%3A%2F%2Feventhubs.azure.net`);
      expect(r.status).toBe(200);
      expect(r.json).toMatchObject({
        token_type: 'Bearer',
        resource: 'https://eventhubs.azure.net',
        access_token: expect.any(String),
      });
      expect(Number(r.json!.expires_on)).toBeGreaterThan(Date.now() / 1000);
    }
    expect((await call('/metadata/identity/oauth2/token?api-version=2018-02-01')).status).toBe(400);
  });

  it('is usable through the real @azure/identity ManagedIdentityCredential', async () => {
    const saved = process.env.AZURE_POD_IDENTITY_AUTHORITY_HOST;
    process.env.AZURE_POD_IDENTITY_AUTHORITY_HOST = sim.url;
    try {
      const credential = new ManagedIdentityCredential();
      const token = await credential.getToken('https://monitor.azure.com/.default');
      expect(token.token).toMatch(/^sim\./);
      expect(token.expiresOnTimestamp).toBeGreaterThan(Date.now());
    } finally {
      if (saved === undefined) delete process.env.AZURE_POD_IDENTITY_AUTHORITY_HOST;
      else process.env.AZURE_POD_IDENTITY_AUTHORITY_HOST = saved;
    }
  });
});
