import { describe, expect, it } from 'vitest';
import { parseScheduledEventsDocument } from '../src/sources/imds/document.ts';

const full = {
  DocumentIncarnation: 2,
  Events: [
    {
      EventId: 'C7061BAC-AFDC-4513-B24B-AA5F13A16123',
      EventStatus: 'Scheduled',
      EventType: 'Freeze',
      ResourceType: 'VirtualMachine',
      Resources: ['WestNO_0', 'WestNO_1'],
      NotBefore: 'Mon, 11 Apr 2022 22:26:58 GMT',
      Description: 'Virtual machine is being paused because of a memory-preserving Live Migration operation.',
      EventSource: 'Platform',
      DurationInSeconds: 5,
    },
  ],
};

describe('parseScheduledEventsDocument', () => {
  it('parses the documented example, NotBefore RFC 1123 -> ISO UTC, EventId case kept', () => {
    const r = parseScheduledEventsDocument(full);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.document.DocumentIncarnation).toBe(2);
    expect(r.document.Events[0]).toMatchObject({
      EventId: 'C7061BAC-AFDC-4513-B24B-AA5F13A16123',
      NotBefore: '2022-04-11T22:26:58.000Z',
      DurationInSeconds: 5,
      EventSource: 'Platform',
    });
  });

  it('maps NotBefore "" (started) to null', () => {
    const r = parseScheduledEventsDocument({
      ...full,
      Events: [{ ...full.Events[0], EventStatus: 'Started', NotBefore: '' }],
    });
    expect(r.ok && r.document.Events[0]!.NotBefore).toBeNull();
  });

  it('tolerates older api-versions: no Description, EventSource, DurationInSeconds', () => {
    const { Description: _d, EventSource: _s, DurationInSeconds: _u, ...old } = full.Events[0]!;
    const r = parseScheduledEventsDocument({ DocumentIncarnation: 1, Events: [old] });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.document.Events[0]).toMatchObject({ Description: '', EventSource: '', DurationInSeconds: -1 });
  });

  it('accepts an empty event list and ignores unknown extra fields', () => {
    const r = parseScheduledEventsDocument({ DocumentIncarnation: 1, Events: [], Future: true });
    expect(r.ok && r.document.Events).toEqual([]);
  });

  it.each([
    ['not an object', 'hello'],
    ['missing Events', { DocumentIncarnation: 1 }],
    ['Events not an array', { DocumentIncarnation: 1, Events: {} }],
    ['incarnation not a number', { DocumentIncarnation: 'seven', Events: [] }],
    ['negative incarnation', { DocumentIncarnation: -1, Events: [] }],
    [
      'event without EventId',
      { DocumentIncarnation: 1, Events: [{ EventType: 'Reboot', EventStatus: 'Scheduled' }] },
    ],
    ['empty EventId', { DocumentIncarnation: 1, Events: [{ ...full.Events[0], EventId: ' ' }] }],
    ['unparseable NotBefore', { DocumentIncarnation: 1, Events: [{ ...full.Events[0], NotBefore: 'soon' }] }],
    ['Resources not strings', { DocumentIncarnation: 1, Events: [{ ...full.Events[0], Resources: [1] }] }],
  ])('rejects a schema-invalid document: %s', (_name, body) => {
    const r = parseScheduledEventsDocument(body);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason.length).toBeGreaterThan(0);
  });
});
