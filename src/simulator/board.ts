import { randomUUID } from 'node:crypto';
import { toRfc1123 } from '../sources/imds/document.ts';

/** One event as the simulated service holds it; NotBefore is kept as an instant. */
export interface SimEvent {
  EventId: string;
  EventType: string;
  EventStatus: 'Scheduled' | 'Started';
  ResourceType: string;
  Resources: string[];
  notBeforeMs: number | null;
  Description: string;
  EventSource: string;
  DurationInSeconds: number;
}

export interface EventSpec {
  readonly EventId?: string;
  readonly EventType?: string;
  readonly Resources?: readonly string[];
  readonly Description?: string;
  readonly EventSource?: string;
  readonly DurationInSeconds?: number;
  readonly ResourceType?: string;
}

/** Fields an api-version adds; older versions must not return them. */
const FIELD_SINCE: Readonly<Record<string, string>> = {
  Description: '2019-04-01',
  EventSource: '2019-08-01',
  DurationInSeconds: '2020-07-01',
};

/**
 * The Scheduled Events document of one simulated VM. Every change of the Events array bumps
 * DocumentIncarnation, as the service does; `resetIncarnation` mimics re-enabling after 24 h idle.
 */
export class EventBoard {
  incarnation = 1;
  readonly events: SimEvent[] = [];
  /** Scheduled events start by themselves once simulated time passes NotBefore, as in Azure. */
  autoStart = true;

  schedule(spec: EventSpec, notBeforeMs: number, selfName: string): SimEvent {
    return this.add(spec, 'Scheduled', notBeforeMs, selfName);
  }

  /** Host hardware failure: Azure skips Scheduled and the event appears already Started. */
  appearStarted(spec: EventSpec, selfName: string): SimEvent {
    return this.add(spec, 'Started', null, selfName);
  }

  private add(
    spec: EventSpec,
    status: SimEvent['EventStatus'],
    notBeforeMs: number | null,
    selfName: string,
  ): SimEvent {
    const ev: SimEvent = {
      EventId: spec.EventId ?? randomUUID().toUpperCase(),
      EventType: spec.EventType ?? 'Reboot',
      EventStatus: status,
      ResourceType: spec.ResourceType ?? 'VirtualMachine',
      Resources: (spec.Resources ?? ['$self']).map((r) => (r === '$self' ? selfName : r)),
      notBeforeMs,
      Description: spec.Description ?? '',
      EventSource: spec.EventSource ?? 'Platform',
      DurationInSeconds: spec.DurationInSeconds ?? -1,
    };
    this.events.push(ev);
    this.incarnation++;
    return ev;
  }

  find(eventId: string): SimEvent | undefined {
    const key = eventId.toLowerCase();
    return this.events.find((e) => e.EventId.toLowerCase() === key);
  }

  /** Starting an event clears NotBefore, as the service does. Returns false for unknown ids. */
  start(eventId: string): boolean {
    const ev = this.find(eventId);
    if (!ev || ev.EventStatus === 'Started') return !!ev;
    ev.EventStatus = 'Started';
    ev.notBeforeMs = null;
    this.incarnation++;
    return true;
  }

  update(
    eventId: string,
    patch: { notBeforeMs?: number; Resources?: string[]; Description?: string; DurationInSeconds?: number },
  ): boolean {
    const ev = this.find(eventId);
    if (!ev) return false;
    if (patch.notBeforeMs !== undefined) ev.notBeforeMs = patch.notBeforeMs;
    if (patch.Resources) ev.Resources = patch.Resources;
    if (patch.Description !== undefined) ev.Description = patch.Description;
    if (patch.DurationInSeconds !== undefined) ev.DurationInSeconds = patch.DurationInSeconds;
    this.incarnation++;
    return true;
  }

  /** Completion and cancellation look the same to a consumer: the event is no longer returned. */
  remove(eventId: string): boolean {
    const ev = this.find(eventId);
    if (!ev) return false;
    this.events.splice(this.events.indexOf(ev), 1);
    this.incarnation++;
    return true;
  }

  clear(): void {
    if (this.events.length === 0) return;
    this.events.length = 0;
    this.incarnation++;
  }

  resetIncarnation(clearEvents: boolean): void {
    if (clearEvents) this.events.length = 0;
    this.incarnation = 1;
  }

  /** Applies time: Scheduled events whose NotBefore has passed start. */
  tick(simNowMs: number): void {
    if (!this.autoStart) return;
    for (const ev of this.events) {
      if (ev.EventStatus === 'Scheduled' && ev.notBeforeMs !== null && ev.notBeforeMs <= simNowMs) {
        this.start(ev.EventId);
      }
    }
  }

  document(apiVersion: string): { DocumentIncarnation: number; Events: Record<string, unknown>[] } {
    return {
      DocumentIncarnation: this.incarnation,
      Events: this.events.map((e) => {
        const out: Record<string, unknown> = {
          EventId: e.EventId,
          EventStatus: e.EventStatus,
          EventType: e.EventType,
          ResourceType: e.ResourceType,
          Resources: [...e.Resources],
          NotBefore: e.notBeforeMs === null ? '' : toRfc1123(e.notBeforeMs),
          Description: e.Description,
          EventSource: e.EventSource,
          DurationInSeconds: e.DurationInSeconds,
        };
        for (const [field, since] of Object.entries(FIELD_SINCE)) if (apiVersion < since) delete out[field];
        return out;
      }),
    };
  }
}
