import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { type Config, configSchema, finalizeConfig } from './schema.ts';

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

function unwrap(s: z.ZodType): z.ZodType {
  let t = s as z.ZodType & { unwrap?: () => z.ZodType; def: { innerType?: z.ZodType; type: string } };
  while (t.def.innerType) t = t.def.innerType as typeof t;
  return t;
}

/** Every scalar setting can be overridden by an environment variable: imds.baseUrl -> SEF_IMDS_BASE_URL. */
export function envOverridableSettings(): readonly {
  env: string;
  path: readonly string[];
  kind: Leaf['kind'];
}[] {
  const out: Leaf[] = [];
  const walk = (shape: Record<string, z.ZodType>, prefix: string[]) => {
    for (const [key, value] of Object.entries(shape)) {
      const inner = unwrap(value);
      const path = [...prefix, key];
      if (inner instanceof z.ZodObject) walk(inner.shape as Record<string, z.ZodType>, path);
      else if (inner instanceof z.ZodNumber) out.push({ path, kind: 'number' });
      else if (inner instanceof z.ZodArray) out.push({ path, kind: 'json' });
      else out.push({ path, kind: 'string' });
    }
  };
  walk(configSchema.shape as Record<string, z.ZodType>, []);
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

  const parsed = configSchema.safeParse(input);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((issue) => {
        const where = issue.path.length ? issue.path.join('.') : '(top level)';
        const actual = getPath(input, issue.path);
        const from =
          [...origin.entries()].find(([p]) => where === p || where.startsWith(`${p}.`))?.[1] ??
          (configPath ? `in ${configPath}` : 'default');
        return `${where}: ${issue.message}; got ${describeValue(actual)} (${from})`;
      }),
    );
  }
  return finalizeConfig(parsed.data);
}
