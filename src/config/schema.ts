import * as v from 'valibot';
import { LOG_LEVELS } from '../log.ts';
import { SINK_DEFINITIONS } from '../sinks/registry.ts';

/** api-versions of Scheduled Events; `{latest}` is not supported by the service. */
export const SCHEDULED_EVENTS_API_VERSIONS = [
  '2020-07-01',
  '2019-08-01',
  '2019-04-01',
  '2019-01-01',
  '2017-11-01',
  '2017-08-01',
  '2017-03-01',
] as const;

const int = (min: number, max: number) => v.pipe(v.number(), v.integer(), v.minValue(min), v.maxValue(max));
const ms = int;

/** Unknown keys are refused with the list of the known ones, so a typo is found at start. */
function settings<E extends v.ObjectEntries>(entries: E) {
  const known = Object.keys(entries).join(', ');
  return v.strictObject(entries, (issue) =>
    issue.received === 'undefined' ? 'required' : `unknown setting (known: ${known})`,
  );
}

/** Settings every sink has, beside its own. */
const sinkCommon = {
  /** Unique; names the sink's cursor and dead-letter file. Defaults to the type. */
  name: v.optional(
    v.pipe(
      v.string(),
      v.regex(/^[A-Za-z0-9._-]{1,64}$/, 'expected letters, digits, ".", "_" or "-", at most 64'),
    ),
  ),
  maxBatchRecords: v.optional(int(1, 10_000), 100),
  maxInFlightBatches: v.optional(int(1, 64), 1),
  retry: v.optional(
    settings({
      initialDelayMs: v.optional(ms(1, 600_000), 500),
      maxDelayMs: v.optional(ms(1, 3_600_000), 60_000),
    }),
    {},
  ),
};

const sinkSchema = v.variant(
  'type',
  SINK_DEFINITIONS.map((d) => settings({ ...d.settings, ...sinkCommon })) as unknown as [
    v.StrictObjectSchema<v.ObjectEntries & { type: v.LiteralSchema<string, undefined> }, string>,
  ],
);

/** The one configuration schema. Every default lives here. */
export const configSchema = settings({
  pollIntervalMs: v.optional(ms(10, 60_000), 1000),
  /**
   * Successful polls further apart than this count as a gap: an event that vanished across a gap
   * gets Outcome "unknown" instead of "cancelled". Default: five poll intervals.
   */
  watchGapToleranceMs: v.optional(ms(10, 3_600_000)),
  stateDir: v.optional(v.pipe(v.string(), v.minLength(1)), '/var/lib/scheduled-events-forwarder'),
  imds: v.optional(
    settings({
      baseUrl: v.optional(
        v.pipe(
          v.string(),
          v.url('expected a URL'),
          v.regex(/^https?:\/\//i, 'expected an http:// or https:// URL'),
        ),
        'http://169.254.169.254',
      ),
      apiVersion: v.optional(v.picklist(SCHEDULED_EVENTS_API_VERSIONS), '2020-07-01'),
      computeApiVersion: v.optional(
        v.pipe(v.string(), v.regex(/^\d{4}-\d{2}-\d{2}$/, 'expected an api-version like 2021-02-01')),
        '2021-02-01',
      ),
      requestTimeoutMs: v.optional(ms(5, 60_000), 800),
      firstRequestTimeoutMs: v.optional(ms(5, 600_000), 120_000),
      maxBackoffMs: v.optional(ms(10, 600_000), 30_000),
      goneRetryWindowMs: v.optional(ms(0, 600_000), 70_000),
      minRequestSpacingMs: v.optional(ms(0, 10_000), 250),
      identityRefreshMs: v.optional(ms(1000, 86_400_000), 600_000),
      /** Records wait this long for the VM identity on a first start before going out without it. */
      identityWaitMs: v.optional(ms(0, 600_000), 30_000),
    }),
    {},
  ),
  spool: v.optional(
    settings({
      maxBytes: v.optional(int(64 * 1024, Number.MAX_SAFE_INTEGER), 64 * 1024 * 1024),
      segmentBytes: v.optional(int(4 * 1024, 1024 * 1024 * 1024), 1024 * 1024),
    }),
    {},
  ),
  sinks: v.optional(v.pipe(v.array(sinkSchema), v.minLength(1, 'at least one sink is required')), [
    { type: 'stdout' },
  ]),
  shutdownTimeoutMs: v.optional(ms(0, 600_000), 10_000),
  statsIntervalMs: v.optional(ms(0, 86_400_000), 300_000),
  log: v.optional(settings({ level: v.optional(v.picklist(LOG_LEVELS), 'info') }), {}),
});

export type ParsedConfig = v.InferOutput<typeof configSchema>;

export interface ConfigProblem {
  readonly path: readonly (string | number)[];
  readonly message: string;
}

/** Rules that span settings; each names the setting to change. */
export function crossChecks(c: ParsedConfig): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  if (c.imds.requestTimeoutMs >= c.pollIntervalMs) {
    problems.push({
      path: ['imds', 'requestTimeoutMs'],
      message: `expected less than pollIntervalMs (${c.pollIntervalMs}) so polls never overlap`,
    });
  }
  if (c.watchGapToleranceMs !== undefined && c.watchGapToleranceMs <= c.pollIntervalMs) {
    problems.push({
      path: ['watchGapToleranceMs'],
      message: `expected more than pollIntervalMs (${c.pollIntervalMs})`,
    });
  }
  if (c.spool.segmentBytes * 2 > c.spool.maxBytes) {
    problems.push({
      path: ['spool', 'maxBytes'],
      message: `expected at least twice spool.segmentBytes (${c.spool.segmentBytes})`,
    });
  }
  const names = new Set<string>();
  c.sinks.forEach((s, i) => {
    const name = (s.name as string | undefined) ?? (s.type as string);
    if (names.has(name)) {
      problems.push({
        path: ['sinks', i, 'name'],
        message: `expected a unique sink name; "${name}" is used twice (set "name" on one of them)`,
      });
    }
    names.add(name);
  });
  return problems;
}

export interface SinkConfig {
  readonly type: string;
  readonly name: string;
  readonly maxBatchRecords: number;
  readonly maxInFlightBatches: number;
  readonly retry: { readonly initialDelayMs: number; readonly maxDelayMs: number };
  readonly settings: Readonly<Record<string, unknown>>;
}

/** The validated configuration, with derived defaults resolved. */
export interface Config extends Omit<ParsedConfig, 'sinks' | 'watchGapToleranceMs'> {
  readonly watchGapToleranceMs: number;
  readonly sinks: readonly SinkConfig[];
}

export function finalizeConfig(c: ParsedConfig): Config {
  return {
    ...c,
    watchGapToleranceMs: c.watchGapToleranceMs ?? 5 * c.pollIntervalMs,
    sinks: c.sinks.map((s) => {
      const { name, maxBatchRecords, maxInFlightBatches, retry, ...settings } = s as Record<
        string,
        unknown
      > & {
        type: string;
        name?: string;
        maxBatchRecords: number;
        maxInFlightBatches: number;
        retry: { initialDelayMs: number; maxDelayMs: number };
      };
      const type = s.type as string;
      return { type, name: name ?? type, maxBatchRecords, maxInFlightBatches, retry, settings };
    }),
  };
}
