import { fileSinkDefinition } from './file/definition.ts';
import { stdoutSinkDefinition } from './stdout/definition.ts';
import type { SinkDefinition } from './types.ts';

/** Adding a sink: a folder with a definition.ts, and one line here. */
export const SINK_DEFINITIONS = [
  stdoutSinkDefinition,
  fileSinkDefinition,
] as const satisfies readonly SinkDefinition[];

export function sinkDefinition(type: string): SinkDefinition | undefined {
  return SINK_DEFINITIONS.find((d) => d.type === type) as SinkDefinition | undefined;
}
