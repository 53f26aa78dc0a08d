import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildWorkbook, SAMPLE_PARAMETER_VALUES, WORKBOOK_PATH } from '../scripts/build-workbook.ts';
import { RECORD_SCHEMA } from '../src/transform/record-schema.ts';
import { parseBicep } from './infra/bicep.ts';
import { alertRules, queryFiles } from './infra/files.ts';
import { analyse, globalsWith, kustoType, pipeOperators } from './infra/kusto.ts';

const TABLE = RECORD_SCHEMA.tableName;
const workspace = globalsWith({ [TABLE]: RECORD_SCHEMA.columns });
/** An ingestion-time transformation sees the stream as a table named `source`. */
const transformInput = globalsWith({ source: RECORD_SCHEMA.columns });
/** Operators that keep one output row per input row at most: all a DCR transformation may use. */
const ROW_WISE = new Set([
  'where',
  'extend',
  'project',
  'project-away',
  'project-keep',
  'project-rename',
  'project-reorder',
  'parse',
]);

const DEDUP = /\|\s*summarize\s+arg_max\(TimeGenerated,\s*\*\)\s+by\s+RecordId/;

function transformProblems(query: string): string[] {
  const problems: string[] = [];
  const r = analyse(query, transformInput);
  for (const e of r.errors) problems.push(`${e.code} ${e.message}`);
  for (const op of pipeOperators(query))
    if (!ROW_WISE.has(op)) problems.push(`operator ${op} is not row-wise`);
  const expected = RECORD_SCHEMA.columns.map((c) => `${c.name}:${kustoType(c.type)}`);
  const actual = (r.columns ?? []).map((c) => `${c.name}:${c.type}`);
  if (expected.join() !== actual.join())
    problems.push(`output columns differ from the table: ${actual.join()}`);
  return problems;
}

function alertProblems(query: string, dimensions: readonly string[]): string[] {
  const r = analyse(query, workspace);
  const out = new Set((r.columns ?? []).map((c) => c.name));
  return [
    ...r.errors.map((e) => `${e.code} ${e.message}`),
    ...dimensions.filter((d) => !out.has(d)).map((d) => `dimension ${d} is not an output column`),
  ];
}

function substitute(query: string): string {
  let q = query;
  for (const [param, value] of Object.entries(SAMPLE_PARAMETER_VALUES)) q = q.split(param).join(value);
  return q;
}

beforeAll(() => {
  // The first analysis warms the language service up (about a second).
  analyse(`${TABLE} | take 1`, workspace);
}, 60_000);

describe('KQL: queries/', () => {
  const queries = queryFiles().filter((q) => q.name !== 'dcr-transform.kql');

  it('ships the queries the operators need', () => {
    expect(queries.map((q) => q.name)).toEqual(
      expect.arrayContaining([
        'fleet-maintenance-audit.kql',
        'upcoming-maintenance.kql',
        'cancelled-maintenance.kql',
        'spot-evictions.kql',
        'maintenance-by-placement.kql',
        'affected-vs-notified.kql',
      ]),
    );
  });

  it.each(queries.map((q) => [q.name, q.text]))(
    '%s analyses without a diagnostic and de-duplicates by RecordId',
    (_n, text) => {
      const r = analyse(text, workspace);
      expect(r.errors).toEqual([]);
      expect(r.columns?.length).toBeGreaterThan(0);
      expect(text).toMatch(DEDUP);
    },
  );

  it('an unknown column is caught', () => {
    const broken = queries
      .find((q) => q.name === 'cancelled-maintenance.kql')!
      .text.replace("Outcome == 'cancelled'", "Result == 'cancelled'");
    expect(analyse(broken, workspace).errors).toEqual([
      expect.objectContaining({ code: 'KS142', snippet: 'Result' }),
    ]);
  });

  it('a query against the wrong table is caught', () => {
    expect(analyse('VMScheduledEvents | take 1', workspace).errors[0]?.code).toBe('KS204');
  });
});

describe('KQL: the workbook', () => {
  const workbook = JSON.parse(readFileSync(WORKBOOK_PATH, 'utf8')) as {
    items: {
      type: number;
      name: string;
      content: { query?: string; parameters?: { name: string; query?: string }[] };
    }[];
  };

  it('is the one scripts/build-workbook.ts builds from queries/ (npm run workbook)', () => {
    expect(workbook).toEqual(buildWorkbook());
  });

  it('has parameters for time range, subscription, resource group and event type', () => {
    const params = workbook.items.find((i) => i.type === 9)!.content.parameters!.map((p) => p.name);
    expect(params).toEqual(['TimeRange', 'Subscription', 'ResourceGroup', 'EventType']);
  });

  it('every tile and parameter query analyses without a diagnostic once parameters are substituted', () => {
    const queries = [
      ...workbook.items.filter((i) => i.type === 3).map((i) => [i.name, i.content.query!] as const),
      ...workbook.items
        .filter((i) => i.type === 9)
        .flatMap((i) =>
          i.content.parameters!.filter((p) => p.query).map((p) => [`parameter ${p.name}`, p.query!] as const),
        ),
    ];
    expect(queries.length).toBeGreaterThanOrEqual(10);
    for (const [name, query] of queries) {
      const q = substitute(query);
      expect(q, name).not.toMatch(/\{[A-Za-z]+(:[a-z]+)?\}/);
      expect(analyse(q, workspace).errors, name).toEqual([]);
    }
  });
});

describe('KQL: alert rules', () => {
  const rules = alertRules(parseBicep('infra/bicep/modules/alerts.bicep'));

  it('there are the impactful-maintenance and Spot-eviction rules', () => {
    expect(rules.map((r) => r.symbol)).toEqual(['impactfulMaintenance', 'spotEviction']);
    expect(rules[0]!.query).toMatch(/'Reboot', 'Redeploy', 'Terminate', 'Preempt'/);
  });

  it.each(rules.map((r) => [r.symbol, r]))(
    '%s analyses clean and its dimensions are output columns',
    (_s, rule) => {
      expect(alertProblems(rule.query, rule.dimensions)).toEqual([]);
      expect(rule.dimensions).toContain('VmName');
      expect(rule.query).toMatch(DEDUP);
    },
  );

  it('a dimension the query does not output is caught', () => {
    const rule = rules[0]!;
    expect(alertProblems(rule.query, [...rule.dimensions, 'Zone'])).toEqual([
      'dimension Zone is not an output column',
    ]);
  });
});

describe('KQL: the DCR transformation', () => {
  const transform = readFileSync('queries/dcr-transform.kql', 'utf8');

  it('uses only row-wise operators and outputs exactly the table columns', () => {
    expect(transformProblems(transform)).toEqual([]);
  });

  it('an aggregation, a dropped column or an unknown column is caught', () => {
    expect(transformProblems(`${transform}| summarize count() by VmId`)).toEqual(
      expect.arrayContaining([
        'operator summarize is not row-wise',
        expect.stringMatching(/output columns differ/),
      ]),
    );
    expect(transformProblems(`${transform}| project-away Zone`)).toEqual([
      expect.stringMatching(/output columns differ/),
    ]);
    expect(transformProblems('source | where Colour == 1')).toEqual([expect.stringMatching(/^KS142/)]);
  });
});
