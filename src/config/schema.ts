import { z } from 'zod';
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

const ms = (min: number, max: number) => z.number().int().min(min).max(max);

/** Settings every sink has, beside its own. */
const sinkCommon = z.object({
  /** Unique; names the sink's cursor and dead-letter file. Defaults to the type. */
  name: z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,64}$/, 'letters, digits, ".", "_" or "-", at most 64')
    .optional(),
  maxBatchRecords: z.number().int().min(1).max(10_000).default(100),
  maxInFlightBatches: z.number().int().min(1).max(64).default(1),
  retry: z
    .object({
      initialDelayMs: ms(1, 600_000).default(500),
      maxDelayMs: ms(1, 3_600_000).default(60_000),
    })
    .default({ initialDelayMs: 500, maxDelayMs: 60_000 }),
});

const sinkSchemas = SINK_DEFINITIONS.map((d) => d.settings.extend(sinkCommon.shape));
const sinkSchema = z.discriminatedUnion('type', sinkSchemas as unknown as [z.ZodObject, ...z.ZodObject[]], {
  error: (issue) =>
    issue.code === 'invalid_union'
      ? `expected a sink type of ${SINK_DEFINITIONS.map((d) => JSON.stringify(d.type)).join(', ')}`
      : undefined,
});

/** The one configuration schema. Every default lives here. */
export const configSchema = z
  .object({
    pollIntervalMs: ms(10, 60_000).default(1000),
    /**
     * Successful polls further apart than this count as a gap: an event that vanished across a
     * gap gets Outcome "unknown" instead of "cancelled". Default: five poll intervals.
     */
    watchGapToleranceMs: ms(10, 3_600_000).optional(),
    stateDir: z.string().min(1).default('/var/lib/scheduled-events-forwarder'),
    imds: z
      .object({
        baseUrl: z
          .url({ protocol: /^https?$/, error: 'expected an http:// or https:// URL' })
          .default('http://169.254.169.254'),
        apiVersion: z.enum(SCHEDULED_EVENTS_API_VERSIONS).default('2020-07-01'),
        computeApiVersion: z
          .string()
          .regex(/^\d{4}-\d{2}-\d{2}$/, 'expected an api-version like 2021-02-01')
          .default('2021-02-01'),
        requestTimeoutMs: ms(5, 60_000).default(800),
        firstRequestTimeoutMs: ms(5, 600_000).default(120_000),
        maxBackoffMs: ms(10, 600_000).default(30_000),
        goneRetryWindowMs: ms(0, 600_000).default(70_000),
        minRequestSpacingMs: ms(0, 10_000).default(250),
        identityRefreshMs: ms(1000, 86_400_000).default(600_000),
        /** Records wait this long for the VM identity on a first start before going out without it. */
        identityWaitMs: ms(0, 600_000).default(30_000),
      })
      .prefault({}),
    spool: z
      .object({
        maxBytes: z
          .number()
          .int()
          .min(64 * 1024)
          .default(64 * 1024 * 1024),
        segmentBytes: z
          .number()
          .int()
          .min(4 * 1024)
          .default(1024 * 1024),
      })
      .prefault({}),
    sinks: z
      .array(sinkSchema)
      .min(1, 'at least one sink is required')
      .prefault([{ type: 'stdout' }]),
    shutdownTimeoutMs: ms(0, 600_000).default(10_000),
    statsIntervalMs: ms(0, 86_400_000).default(300_000),
    log: z.object({ level: z.enum(LOG_LEVELS).default('info') }).prefault({}),
  })
  .strict()
  .superRefine((c, ctx) => {
    if (c.imds.requestTimeoutMs >= c.pollIntervalMs) {
      ctx.addIssue({
        code: 'custom',
        path: ['imds', 'requestTimeoutMs'],
        message: `expected less than pollIntervalMs (${c.pollIntervalMs}) so polls never overlap`,
        input: c.imds.requestTimeoutMs,
      });
    }
    if (c.watchGapToleranceMs !== undefined && c.watchGapToleranceMs <= c.pollIntervalMs) {
      ctx.addIssue({
        code: 'custom',
        path: ['watchGapToleranceMs'],
        message: `expected more than pollIntervalMs (${c.pollIntervalMs})`,
        input: c.watchGapToleranceMs,
      });
    }
    if (c.spool.segmentBytes * 2 > c.spool.maxBytes) {
      ctx.addIssue({
        code: 'custom',
        path: ['spool', 'maxBytes'],
        message: `expected at least twice spool.segmentBytes (${c.spool.segmentBytes})`,
        input: c.spool.maxBytes,
      });
    }
    const names = new Set<string>();
    c.sinks.forEach((s, i) => {
      const name = (s.name as string | undefined) ?? (s.type as string);
      if (names.has(name)) {
        ctx.addIssue({
          code: 'custom',
          path: ['sinks', i, 'name'],
          message: `expected a unique sink name; "${name}" is used twice (set "name" on one of them)`,
          input: s.name,
        });
      }
      names.add(name);
    });
  });

export type ConfigInput = z.input<typeof configSchema>;
export type ParsedConfig = z.output<typeof configSchema>;

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
      return {
        type: s.type as string,
        name: name ?? (s.type as string),
        maxBatchRecords,
        maxInFlightBatches,
        retry,
        settings,
      };
    }),
  };
}
