import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, envOverridableSettings, loadConfig, parseConfig } from '../src/config/load.ts';
import { useTempDirs } from './helpers/fs.ts';

const tempDir = useTempDirs();

function problems(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return [...err.problems];
    throw err;
  }
  throw new Error('expected a ConfigError');
}

describe('configuration', () => {
  it('has documented defaults', () => {
    const c = parseConfig({}, {}, {});
    expect(c).toMatchObject({
      pollIntervalMs: 1000,
      watchGapToleranceMs: 5000,
      stateDir: '/var/lib/scheduled-events-forwarder',
      imds: {
        baseUrl: 'http://169.254.169.254',
        apiVersion: '2020-07-01',
        requestTimeoutMs: 800,
        firstRequestTimeoutMs: 120_000,
      },
      sinks: [{ type: 'stdout', name: 'stdout', maxBatchRecords: 100, maxInFlightBatches: 1 }],
    });
  });

  it('names the setting, the expected and the actual value', () => {
    expect(problems(() => parseConfig({ pollIntervalMs: 'fast' }, {}, {}, 'agent.json'))).toEqual([
      expect.stringMatching(/^pollIntervalMs: .*expected number.*got "fast" \(in agent\.json\)$/),
    ]);
    expect(problems(() => parseConfig({ imds: { apiVersion: 'latest' } }, {}, {}))).toEqual([
      expect.stringMatching(/^imds\.apiVersion: .*"2020-07-01".*got "latest"/),
    ]);
  });

  it('rejects a request timeout not shorter than the poll interval', () => {
    expect(
      problems(() => parseConfig({ pollIntervalMs: 1000, imds: { requestTimeoutMs: 1000 } }, {}, {})),
    ).toEqual([
      expect.stringMatching(/^imds\.requestTimeoutMs: expected less than pollIntervalMs \(1000\).*got 1000/),
    ]);
  });

  it('rejects unknown keys, unknown sink types, duplicate sink names and missing file paths', () => {
    expect(problems(() => parseConfig({ pollIntervalMS: 5 }, {}, {}))[0]).toMatch(
      /^pollIntervalMS: unknown setting \(known: pollIntervalMs, /,
    );
    expect(problems(() => parseConfig({ pollIntervalMs: 5 }, {}, {}))[0]).toBe(
      'pollIntervalMs: expected >=10; got 5 (default)',
    );
    expect(problems(() => parseConfig({ sinks: [{ type: 'kafka' }] }, {}, {}))[0]).toMatch(
      /^sinks\.0\.type: expected \("stdout" \| "file"\); got "kafka"/,
    );
    expect(
      problems(() => parseConfig({ sinks: [{ type: 'stdout' }, { type: 'stdout' }] }, {}, {}))[0],
    ).toMatch(/^sinks\.1\.name: expected a unique sink name/);
    expect(problems(() => parseConfig({ sinks: [{ type: 'file' }] }, {}, {}))[0]).toMatch(
      /^sinks\.0\.path: required; got nothing/,
    );
    expect(problems(() => parseConfig({ sinks: [] }, {}, {}))[0]).toMatch(
      /^sinks: at least one sink is required/,
    );
  });

  it('lets every scalar setting be overridden from the environment, and names the variable on error', () => {
    const env = {
      SEF_POLL_INTERVAL_MS: '2000',
      SEF_IMDS_BASE_URL: 'http://10.0.0.5',
      SEF_LOG_LEVEL: 'debug',
      SEF_SPOOL_MAX_BYTES: '4194304',
    };
    const c = parseConfig({ pollIntervalMs: 500 }, env, {});
    expect(c.pollIntervalMs).toBe(2000);
    expect(c.imds.baseUrl).toBe('http://10.0.0.5');
    expect(c.log.level).toBe('debug');
    expect(c.spool.maxBytes).toBe(4194304);
    expect(problems(() => parseConfig({}, { SEF_IMDS_REQUEST_TIMEOUT_MS: 'soon' }, {}))[0]).toMatch(
      /^imds\.requestTimeoutMs: .*got "soon" \(from SEF_IMDS_REQUEST_TIMEOUT_MS\)$/,
    );
    expect(problems(() => parseConfig({}, { SEF_IMDS_BASE_URL: 'ftp://x' }, {}))[0]).toMatch(
      /imds\.baseUrl: expected an http/,
    );
    expect(envOverridableSettings().map((s) => s.env)).toEqual(
      expect.arrayContaining(['SEF_SINKS', 'SEF_IMDS_API_VERSION', 'SEF_STATE_DIR']),
    );
  });

  it('sinks can come from SEF_SINKS as JSON', () => {
    const c = parseConfig({}, { SEF_SINKS: '[{"type":"file","path":"/tmp/x.jsonl","name":"audit"}]' }, {});
    expect(c.sinks).toEqual([
      expect.objectContaining({
        type: 'file',
        name: 'audit',
        settings: expect.objectContaining({ path: '/tmp/x.jsonl' }),
      }),
    ]);
    expect(problems(() => parseConfig({}, { SEF_SINKS: '[{' }, {}))[0]).toMatch(
      /^sinks: expected JSON.*from SEF_SINKS/,
    );
  });

  it('the README configuration table lists every setting with its environment variable', async () => {
    const { readFile } = await import('node:fs/promises');
    const readme = await readFile(new URL('../README.md', import.meta.url), 'utf8');
    for (const s of envOverridableSettings()) {
      const row = new RegExp(`\\|\\s*\`${s.path.join('\\.')}\`\\s*\\|\\s*\`${s.env}\``);
      expect(readme, s.path.join('.')).toMatch(row);
    }
  });

  it('reads a JSON file and reports unreadable or invalid files clearly', async () => {
    const dir = await tempDir();
    const good = join(dir, 'good.json');
    await writeFile(good, JSON.stringify({ pollIntervalMs: 2000 }));
    expect((await loadConfig({ configPath: good, env: {} })).pollIntervalMs).toBe(2000);
    const bad = join(dir, 'bad.json');
    await writeFile(bad, '{ pollIntervalMs: 2000 }');
    await expect(loadConfig({ configPath: bad, env: {} })).rejects.toThrow(
      /bad\.json: expected a JSON object, got invalid JSON/,
    );
    await expect(loadConfig({ configPath: join(dir, 'missing.json'), env: {} })).rejects.toThrow(
      /cannot be read \(ENOENT\)/,
    );
  });
});
