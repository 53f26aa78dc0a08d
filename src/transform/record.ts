import { createHash } from 'node:crypto';
import type { ChangeKind, EventChange, Outcome } from '../sources/diff.ts';
import { eventKey } from '../sources/imds/document.ts';
import type { VmIdentity } from '../sources/imds/vm-identity.ts';

/**
 * One change record. Column names, order and types are those of
 * schema/scheduled-event-record.json (test/record-schema.test.ts proves they agree).
 */
export interface ScheduledEventRecord {
  readonly TimeGenerated: string;
  readonly RecordId: string;
  readonly Change: ChangeKind;
  readonly Outcome: Outcome;
  readonly EventId: string;
  readonly EventType: string;
  readonly EventStatus: string;
  readonly EventSource: string;
  readonly ResourceType: string;
  readonly Resources: readonly string[];
  readonly Description: string;
  readonly NotBefore: string | null;
  readonly DurationInSeconds: number;
  readonly DocumentIncarnation: number;
  readonly FirstSeen: string;
  readonly AffectsThisVm: boolean;
  readonly VmId: string;
  readonly VmName: string;
  readonly ComputerName: string;
  readonly ResourceId: string;
  readonly SubscriptionId: string;
  readonly ResourceGroup: string;
  readonly Location: string;
  readonly Zone: string;
  readonly VmScaleSetName: string;
  readonly VmSize: string;
  readonly OsType: string;
  readonly Priority: string;
  readonly PlatformFaultDomain: string;
  readonly PlatformUpdateDomain: string;
  readonly AgentVersion: string;
}

/**
 * Deterministic, so a record re-emitted after a crash carries the same id and consumers can
 * de-duplicate. `updated` can happen several times per event, so its id includes the incarnation.
 */
export function recordId(
  vmId: string,
  eventId: string,
  change: ChangeKind,
  documentIncarnation: number,
): string {
  const parts = [vmId.toLowerCase(), eventKey(eventId), change];
  if (change === 'updated') parts.push(String(documentIncarnation));
  const hex = createHash('sha256').update(parts.join('\n')).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

/** Events are broadcast to a whole availability set or placement group; Resources says who is hit. */
export function affectsVm(resources: readonly string[], vmName: string): boolean {
  if (vmName === '') return false;
  const name = vmName.toLowerCase();
  return resources.some((r) => r.toLowerCase() === name);
}

/**
 * `hostKey` stands in for VmId in the RecordId while the VM identity is unknown: events are
 * broadcast to whole availability sets, so an empty VmId would give every such VM the same ids.
 */
export function buildRecord(
  change: EventChange,
  vm: VmIdentity,
  agentVersion: string,
  hostKey = '',
): ScheduledEventRecord {
  const e = change.event;
  return Object.freeze({
    TimeGenerated: change.observedAt,
    RecordId: recordId(vm.VmId || hostKey, e.EventId, change.change, change.documentIncarnation),
    Change: change.change,
    Outcome: change.outcome,
    EventId: e.EventId,
    EventType: e.EventType,
    EventStatus: e.EventStatus,
    EventSource: e.EventSource,
    ResourceType: e.ResourceType,
    Resources: Object.freeze([...e.Resources]),
    Description: e.Description,
    NotBefore: e.NotBefore,
    DurationInSeconds: e.DurationInSeconds,
    DocumentIncarnation: change.documentIncarnation,
    FirstSeen: change.firstSeen,
    AffectsThisVm: affectsVm(e.Resources, vm.VmName),
    VmId: vm.VmId,
    VmName: vm.VmName,
    ComputerName: vm.ComputerName,
    ResourceId: vm.ResourceId,
    SubscriptionId: vm.SubscriptionId,
    ResourceGroup: vm.ResourceGroup,
    Location: vm.Location,
    Zone: vm.Zone,
    VmScaleSetName: vm.VmScaleSetName,
    VmSize: vm.VmSize,
    OsType: vm.OsType,
    Priority: vm.Priority,
    PlatformFaultDomain: vm.PlatformFaultDomain,
    PlatformUpdateDomain: vm.PlatformUpdateDomain,
    AgentVersion: agentVersion,
  });
}
