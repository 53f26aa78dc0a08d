import pc from 'picocolors';
import type { ScheduledEventRecord } from '../../transform/record.ts';

const CHANGE_COLOUR: Record<string, (s: string) => string> = {
  appeared: pc.yellow,
  started: pc.red,
  updated: pc.cyan,
  removed: pc.green,
};

/** A human line: time, change, type, status, who is affected, notice. */
export function formatTimelineLine(r: ScheduledEventRecord): string {
  const colour = CHANGE_COLOUR[r.Change] ?? ((s: string) => s);
  const time = r.TimeGenerated.slice(11, 19);
  const change = colour(r.Change.padEnd(8));
  const outcome = r.Outcome ? ` (${r.Outcome})` : '';
  const target = r.AffectsThisVm
    ? pc.bold('this VM')
    : pc.dim(`not this VM: ${r.Resources.join(', ') || '-'}`);
  const notBefore = r.NotBefore ? ` NotBefore ${r.NotBefore}` : '';
  const duration = r.DurationInSeconds >= 0 ? ` ~${r.DurationInSeconds}s` : '';
  const source = r.EventSource ? ` ${r.EventSource}` : '';
  return `${pc.dim(time)} ${change} ${pc.bold(r.EventType.padEnd(9))} ${r.EventStatus.padEnd(9)}${outcome} ${target}${source}${duration}${notBefore} ${pc.dim(r.EventId)}`;
}
