import { fileSinkDefinition } from './file/definition.ts';
import { stdoutSinkDefinition } from './stdout/definition.ts';
import type { SettingsEntries, SinkDefinition } from './types.ts';

/** Adding a sink: a folder with a definition.ts, and one line here. */
export const SINK_DEFINITIONS: readonly SinkDefinition[] = [
  stdoutSinkDefinition,
  fileSinkDefinition,
] as unknown as readonly SinkDefinition<SettingsEntries>[];

export function sinkDefinition(type: string): SinkDefinition | undefined {
  return SINK_DEFINITIONS.find((d) => d.type === type);
}
