import { readFile } from 'node:fs/promises';
import * as v from 'valibot';
import { type Config, configSchema, crossChecks, finalizeConfig } from './schema.ts';

export const ENV_PREFIX = 'SEF_';

/** Invalid configuration: every line names the setting, what was expected and what was given. */
export class ConfigError extends Error {
  readonly problems: readonly string[];

  constructor(problems: readonly string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

type Leaf = { path: string[]; kind: 'number' | 'string' | 'json' };
type AnySchema = { type: string; wrapped?: AnySchema; entries?: Record<string, AnySchema> };

/** Every scalar setting can be overridden by an environment variable: imds.baseUrl -> SEF_IMDS_BASE_URL. */
export function envOverridableSettings(): readonly {
  env: string;
  path: readonly string[];
  kind: Leaf['kind'];
}[] {
  const out: Leaf[] = [];
  const walk = (entries: Record<string, AnySchema>, prefix: string[]) => {
    for (const [key, value] of Object.entries(entries)) {
      let inner = value;
      while (inner.wrapped) inner = inner.wrapped;
      const path = [...prefix, key];
      if (inner.entries) walk(inner.entries, path);
      else if (inner.type === 'number') out.push({ path, kind: 'number' });
      else if (inner.type === 'array') out.push({ path, kind: 'json' });
      else out.push({ path, kind: 'string' });
    }
  };
  walk(configSchema.entries as unknown as Record<string, AnySchema>, []);
  return out.map((l) => ({ ...l, env: envName(l.path) }));
}

function envName(path: readonly string[]): string {
  return ENV_PREFIX + path.map((p) => p.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase()).join('_');
}

function setPath(target: Record<string, unknown>, path: readonly string[], value: unknown): void {
  let node = target;
  for (const key of path.slice(0, -1)) {
    if (typeof node[key] !== 'object' || node[key] === null) node[key] = {};
    node = node[key] as Record<string, unknown>;
  }
  node[path.at(-1)!] = value;
}

function getPath(source: unknown, path: readonly PropertyKey[]): unknown {
  let node = source;
  for (const key of path) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<PropertyKey, unknown>)[key];
  }
  return node;
}

/** Valibot's built-in messages repeat the received value; ours add it once, with where it came from. */
function expectation(issue: v.BaseIssue<unknown>): string {
  if (!issue.message.startsWith('Invalid ')) return issue.message;
  if (issue.received === 'undefined') return 'required';
  return `expected ${issue.expected}`;
}

function describeValue(v: unknown): string {
  if (v === undefined) return 'nothing';
  const json = JSON.stringify(v);
  return json.length > 120 ? `${json.slice(0, 117)}...` : json;
}

export interface LoadOptions {
  readonly configPath?: string;
  readonly env?: NodeJS.ProcessEnv;
  /** Values that win over the file and the environment (used by `demo` and tests). */
  readonly overrides?: Readonly<Record<string, unknown>>;
}

/** File, then environment, then overrides; validated as a whole before anything is built. */
export async function loadConfig(opts: LoadOptions = {}): Promise<Config> {
  let fromFile: Record<string, unknown> = {};
  if (opts.configPath) {
    let text: string;
    try {
      text = await readFile(opts.configPath, 'utf8');
    } catch (err) {
      throw new ConfigError([
        `config file ${opts.configPath}: cannot be read (${(err as NodeJS.ErrnoException).code ?? err})`,
      ]);
    }
    try {
      const parsed = JSON.parse(text) as unknown;
      if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed))
        throw new Error('expected a JSON object');
      fromFile = parsed as Record<string, unknown>;
    } catch (err) {
      throw new ConfigError([
        `config file ${opts.configPath}: expected a JSON object, got invalid JSON (${(err as Error).message})`,
      ]);
    }
  }
  return parseConfig(fromFile, opts.env ?? process.env, opts.overrides ?? {}, opts.configPath);
}

export function parseConfig(
  fromFile: Record<string, unknown>,
  env: NodeJS.ProcessEnv,
  overrides: Readonly<Record<string, unknown>>,
  configPath?: string,
): Config {
  const input = structuredClone(fromFile);
  const origin = new Map<string, string>();
  const problems: string[] = [];
  for (const s of envOverridableSettings()) {
    const raw = env[s.env];
    if (raw === undefined || raw === '') continue;
    let value: unknown = raw;
    if (s.kind === 'number') value = /^-?\d+(\.\d+)?$/.test(raw.trim()) ? Number(raw) : raw;
    if (s.kind === 'json') {
      try {
        value = JSON.parse(raw);
      } catch {
        problems.push(`${s.path.join('.')}: expected JSON, got ${describeValue(raw)} (from ${s.env})`);
        continue;
      }
    }
    setPath(input, s.path, value);
    origin.set(s.path.join('.'), `from ${s.env}`);
  }
  for (const [dotted, value] of Object.entries(overrides)) {
    setPath(input, dotted.split('.'), value);
    origin.set(dotted, 'set by the caller');
  }
  if (problems.length) throw new ConfigError(problems);

  const describe = (path: readonly PropertyKey[], message: string) => {
    const where = path.length ? path.join('.') : '(top level)';
    const actual = getPath(input, path);
    const from =
      [...origin.entries()].find(([p]) => where === p || where.startsWith(`${p}.`))?.[1] ??
      (configPath ? `in ${configPath}` : 'default');
    return `${where}: ${message}; got ${describeValue(actual)} (${from})`;
  };
  const parsed = v.safeParse(configSchema, input);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.issues.map((issue) =>
        describe(
          (issue.path ?? []).map((p) => p.key as PropertyKey),
          expectation(issue),
        ),
      ),
    );
  }
  const cross = crossChecks(parsed.output);
  if (cross.length) throw new ConfigError(cross.map((p) => describe(p.path, p.message)));
  return finalizeConfig(parsed.output);
}
