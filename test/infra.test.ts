import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { RECORD_SCHEMA, type ColumnDefinition } from '../src/transform/record-schema.ts';
import { checkInfrastructure, EVENT_HUBS_DATA_SENDER, parseBicep } from './infra/bicep.ts';
import { bicepPaths, parseAllBicep, parseAllBicepWith } from './infra/files.ts';
import { sampleRecord } from './helpers/records.ts';

const DCR_TYPES = ['string', 'int', 'long', 'real', 'boolean', 'datetime', 'dynamic'];
const TABLE_TYPES = ['string', 'int', 'long', 'real', 'boolean', 'dateTime', 'guid', 'dynamic'];

/** Where a record and the schema file disagree: names, order, and value types. */
function schemaDrift(columns: readonly ColumnDefinition[], record: Record<string, unknown>): string[] {
  const problems: string[] = [];
  const names = columns.map((c) => c.name);
  const keys = Object.keys(record);
  for (const n of names) if (!keys.includes(n)) problems.push(`column ${n} is not in the record`);
  for (const k of keys) if (!names.includes(k)) problems.push(`record field ${k} is not a column`);
  if (problems.length === 0 && names.join() !== keys.join())
    problems.push('column order differs from the record');
  for (const c of columns) {
    const v = record[c.name];
    if (v === undefined) continue;
    const ok =
      (c.type === 'string' && typeof v === 'string') ||
      (c.type === 'datetime' && (v === null || (typeof v === 'string' && !Number.isNaN(Date.parse(v))))) ||
      ((c.type === 'int' || c.type === 'long') && Number.isInteger(v)) ||
      (c.type === 'real' && typeof v === 'number') ||
      (c.type === 'boolean' && typeof v === 'boolean') ||
      (c.type === 'dynamic' && typeof v === 'object');
    if (!ok) problems.push(`column ${c.name} is ${c.type} but the record holds ${JSON.stringify(v)}`);
  }
  return problems;
}

describe('Bicep: syntax', () => {
  it('every .bicep file parses without errors', () => {
    const paths = bicepPaths();
    expect(paths.length).toBeGreaterThanOrEqual(8);
    for (const p of paths) expect(parseBicep(p).syntaxErrors, p).toEqual([]);
  });

  it('a syntax error is caught', () => {
    const files = parseAllBicepWith('modules/event-hubs.bicep', (t) =>
      t.replace("    minimumTlsVersion: '1.2'\n  }", "    minimumTlsVersion: '1.2'\n"),
    );
    expect(checkInfrastructure(files).some((p) => p.includes('syntax'))).toBe(true);
  });

  it('every loadJsonContent / loadTextContent names a file that exists', () => {
    for (const f of parseAllBicep())
      for (const l of f.loads) expect(existsSync(l.path), `${f.path}: ${l.path}`).toBe(true);
  });
});

describe('Bicep: static assertions', () => {
  it('the infrastructure keeps every rule', () => {
    expect(checkInfrastructure(parseAllBicep())).toEqual([]);
  });

  it.each([
    [
      'TLS 1.0',
      'modules/event-hubs.bicep',
      (t: string) => t.replace("minimumTlsVersion: '1.2'", "minimumTlsVersion: '1.0'"),
      /minimumTlsVersion must be '1.2'/,
    ],
    [
      'local auth on',
      'modules/event-hubs.bicep',
      (t: string) => t.replace('disableLocalAuth: true', 'disableLocalAuth: false'),
      /disableLocalAuth must be true/,
    ],
    [
      'a wrong role GUID',
      'modules/role-assignments.bicep',
      (t: string) => t.replace(EVENT_HUBS_DATA_SENDER, 'f526a384-b230-433a-b45c-95f59c4a2dec'),
      /is not one of the two/,
    ],
    [
      'a role scoped to the namespace',
      'modules/role-assignments.bicep',
      (t: string) => t.replace('scope: hub', 'scope: namespace'),
      /must be scoped to a Microsoft\.EventHub\/namespaces\/eventhubs/,
    ],
    [
      'a third role assignment',
      'modules/identity.bicep',
      (t: string) =>
        `${t}\nresource extra 'Microsoft.Authorization/roleAssignments@2022-04-01' = {\n  name: guid('x')\n  properties: {\n    principalType: 'ServicePrincipal'\n  }\n}\n`,
      /expected exactly 2 role assignments/,
    ],
    [
      'a user principal type',
      'modules/role-assignments.bicep',
      (t: string) => t.replace("principalType: 'ServicePrincipal'", "principalType: 'User'"),
      /principalType must be 'ServicePrincipal'/,
    ],
    [
      'an unpinned api-version',
      'modules/workbook.bicep',
      (t: string) => t.replace("'Microsoft.Insights/workbooks@2023-06-01'", "'Microsoft.Insights/workbooks'"),
      /api-version not pinned/,
    ],
    [
      'a DCR flow to an undeclared destination',
      'modules/data-collection.bicep',
      (t: string) =>
        t.replace(
          "        destinations: [\n          'workspace'",
          "        destinations: [\n          'elsewhere'",
        ),
      /destination "elsewhere" is not a declared destination/,
    ],
    [
      'a DCR output stream that is not the table',
      'modules/data-collection.bicep',
      (t: string) => t.replace("outputStream: 'Custom-${tableName}'", "outputStream: 'Microsoft-Syslog'"),
      /outputStream must be/,
    ],
    [
      'a stream declared by hand',
      'modules/data-collection.bicep',
      (t: string) => t.replace('for column in recordSchema.columns', 'for column in []'),
      /generated from recordSchema\.columns/,
    ],
    [
      'a table that keeps datetime as is',
      'modules/log-analytics-table.bicep',
      (t: string) => t.replace("column.type == 'datetime' ? 'dateTime' : column.type", 'column.type'),
      /datetime -> dateTime/,
    ],
    [
      'a conditional between two scopes (BCP420)',
      'modules/log-analytics.bicep',
      (t: string) =>
        t.replace(
          /scope: resourceGroup\(\n\s+createWorkspace[\s\S]*?\n {2}\)/,
          "scope: createWorkspace ? resourceGroup() : resourceGroup(split(existingWorkspaceId, '/')[2], split(existingWorkspaceId, '/')[4])",
        ),
      /conditional between two scopes/,
    ],
    [
      'a data collection rule outside the workspace region',
      'main.bicep',
      (t: string) => t.replace('location: logAnalytics.outputs.workspaceLocation', 'location: location'),
      /workspace's region/,
    ],
  ])('catches %s', (_what, file, edit, problem) => {
    expect(checkInfrastructure(parseAllBicepWith(file, edit))).toEqual(
      expect.arrayContaining([expect.stringMatching(problem)]),
    );
  });
});

describe('the one record schema', () => {
  it('holds only types a DCR stream and a table accept', () => {
    for (const c of RECORD_SCHEMA.columns) {
      expect(DCR_TYPES, c.name).toContain(c.type);
      expect(TABLE_TYPES, c.name).toContain(c.type === 'datetime' ? 'dateTime' : c.type);
      expect(c.description.length, c.name).toBeGreaterThan(0);
    }
    expect(RECORD_SCHEMA.columns.some((c) => c.name === 'TimeGenerated' && c.type === 'datetime')).toBe(true);
  });

  it('agrees with the TypeScript record (the table and the DCR stream are generated from it)', () => {
    expect(schemaDrift(RECORD_SCHEMA.columns, sampleRecord(1) as unknown as Record<string, unknown>)).toEqual(
      [],
    );
  });

  it('catches drift between the record and the table', () => {
    const record = sampleRecord(1) as unknown as Record<string, unknown>;
    const added: ColumnDefinition[] = [
      ...RECORD_SCHEMA.columns,
      { name: 'MaintenanceWindow', type: 'string', description: 'not in the record' },
    ];
    expect(schemaDrift(added, record)).toEqual(['column MaintenanceWindow is not in the record']);
    const dropped = RECORD_SCHEMA.columns.filter((c) => c.name !== 'Zone');
    expect(schemaDrift(dropped, record)).toEqual(['record field Zone is not a column']);
    const retyped = RECORD_SCHEMA.columns.map((c) =>
      c.name === 'DurationInSeconds' ? { ...c, type: 'string' as const } : c,
    );
    expect(schemaDrift(retyped, record)).toEqual([
      expect.stringMatching(/column DurationInSeconds is string/),
    ]);
  });

  it('the Bicep loads this very file', () => {
    const schemaPath = new URL('../schema/scheduled-event-record.json', import.meta.url).pathname;
    const loaders = parseAllBicep().filter((f) => f.loads.some((l) => l.path === schemaPath));
    expect(loaders.map((f) => f.path.split('infra/bicep/')[1]).sort()).toEqual([
      'modules/data-collection.bicep',
      'modules/log-analytics.bicep',
    ]);
    expect(JSON.parse(readFileSync(schemaPath, 'utf8'))).toEqual(RECORD_SCHEMA);
  });
});
