import { UNKNOWN_VM_IDENTITY } from '../../src/sources/imds/vm-identity.ts';
import { buildRecord, type ScheduledEventRecord } from '../../src/transform/record.ts';

/** A valid record with a distinct EventId, for spool and sink tests. */
export function sampleRecord(i: number): ScheduledEventRecord {
  return buildRecord(
    {
      change: 'appeared',
      outcome: '',
      observedAt: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(),
      firstSeen: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(),
      documentIncarnation: i,
      event: {
        EventId: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
        EventType: 'Reboot',
        EventStatus: 'Scheduled',
        EventSource: 'Platform',
        ResourceType: 'VirtualMachine',
        Resources: ['vm0'],
        Description: 'Host server is undergoing maintenance.',
        NotBefore: '2026-01-01T00:15:00.000Z',
        DurationInSeconds: -1,
      },
    },
    { ...UNKNOWN_VM_IDENTITY, VmId: 'vm-id', VmName: 'vm0' },
    'test',
  );
}
