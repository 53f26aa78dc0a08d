import { describe, expect, it } from 'vitest';
import { defaultCompute } from '../src/simulator/compute.ts';
import { diffDocument, EMPTY_WATCH_STATE } from '../src/sources/diff.ts';
import { identityFromCompute } from '../src/sources/imds/vm-identity.ts';
import { affectsVm, buildRecord, recordId } from '../src/transform/record.ts';
import { RECORD_SCHEMA } from '../src/transform/record-schema.ts';

const vm = identityFromCompute(defaultCompute());
const [change] = diffDocument(
  EMPTY_WATCH_STATE,
  {
    DocumentIncarnation: 3,
    Events: [
      {
        EventId: 'C7061BAC-AFDC-4513-B24B-AA5F13A16123',
        EventType: 'Freeze',
        EventStatus: 'Scheduled',
        EventSource: 'Platform',
        ResourceType: 'VirtualMachine',
        Resources: ['SIM-VM-0', 'WestNO_1'],
        Description: 'd',
        NotBefore: '2026-01-01T00:15:00.000Z',
        DurationInSeconds: 5,
      },
    ],
  },
  { observedAt: '2026-01-01T00:00:00.000Z', watchedWithoutGap: true },
).changes;

function kqlTypeOf(v: unknown): string[] {
  if (v === null) return ['datetime']; // only NotBefore is nullable
  if (Array.isArray(v)) return ['dynamic'];
  if (typeof v === 'boolean') return ['boolean'];
  if (typeof v === 'number') return Number.isInteger(v) ? ['int', 'long'] : ['real'];
  if (typeof v === 'string')
    return /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/.test(v) ? ['datetime', 'string'] : ['string'];
  return ['dynamic'];
}

describe('record contract', () => {
  const record = buildRecord(change!, vm, '1.2.3');

  it('has exactly the schema columns, in schema order', () => {
    expect(Object.keys(record)).toEqual(RECORD_SCHEMA.columns.map((c) => c.name));
  });

  it('has values of the schema column types', () => {
    for (const col of RECORD_SCHEMA.columns) {
      const value = (record as unknown as Record<string, unknown>)[col.name];
      expect(kqlTypeOf(value), `${col.name} is ${JSON.stringify(value)}`).toContain(col.type);
    }
  });

  it('is plain frozen data that survives JSON unchanged', () => {
    expect(Object.isFrozen(record)).toBe(true);
    expect(JSON.parse(JSON.stringify(record))).toEqual(record);
    expect(Object.values(record).some((v) => typeof v === 'function')).toBe(false);
  });

  it('marks AffectsThisVm from Resources, case-insensitively', () => {
    expect(record.AffectsThisVm).toBe(true);
    expect(affectsVm(['WestNO_1'], 'sim-vm-0')).toBe(false);
    expect(affectsVm(['sim-vm-0'], '')).toBe(false);
  });

  it('RecordId is deterministic from VmId + EventId (any case) + Change (+ incarnation for updated)', () => {
    // A fixed vector: a change here breaks de-duplication across agent versions.
    expect(
      recordId('6d9d7a1e-0b9f-4e0c-9a59-5c3c0a3b1f01', 'C7061BAC-AFDC-4513-B24B-AA5F13A16123', 'appeared', 2),
    ).toBe('6f18a1f8-d975-026f-ee10-5ab484a066ef');
    expect(record.RecordId).toBe(recordId(vm.VmId, 'c7061bac-afdc-4513-b24b-aa5f13a16123', 'appeared', 99));
    expect(recordId('v', 'e', 'appeared', 1)).not.toBe(recordId('v', 'e', 'started', 1));
    expect(recordId('v', 'e', 'updated', 1)).not.toBe(recordId('v', 'e', 'updated', 2));
    expect(recordId('v1', 'e', 'removed', 1)).not.toBe(recordId('v2', 'e', 'removed', 1));
  });

  it('the schema file names a table and a stream, with unique PascalCase columns', () => {
    expect(RECORD_SCHEMA.tableName).toMatch(/_CL$/);
    expect(RECORD_SCHEMA.streamName).toMatch(/^Custom-/);
    const names = RECORD_SCHEMA.columns.map((c) => c.name);
    expect(new Set(names).size).toBe(names.length);
    for (const n of names) expect(n).toMatch(/^[A-Z][A-Za-z]+$/);
    expect(names[0]).toBe('TimeGenerated');
  });
});
