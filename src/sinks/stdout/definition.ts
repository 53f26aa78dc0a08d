import * as v from 'valibot';
import type { SinkDefinition } from '../types.ts';

const settings = {
  type: v.literal('stdout'),
  /** json: one JSON object per line, for jq; pretty: a coloured timeline for people; auto: pretty on a terminal. */
  format: v.optional(v.picklist(['json', 'pretty', 'auto']), 'json'),
};

export const stdoutSinkDefinition: SinkDefinition<typeof settings> = {
  type: 'stdout',
  settings,
  async create(s, ctx) {
    const { StdoutSink } = await import('./stdout-sink.ts');
    const pretty = s.format === 'pretty' || (s.format === 'auto' && ctx.stdout.isTTY === true);
    return new StdoutSink(ctx.stdout, pretty);
  },
};
