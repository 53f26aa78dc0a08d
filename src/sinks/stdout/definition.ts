import { z } from 'zod';
import type { SinkDefinition } from '../types.ts';

const settings = z.object({
  type: z.literal('stdout'),
  /** json: one JSON object per line, for jq; pretty: a coloured timeline for people. */
  format: z.enum(['json', 'pretty', 'auto']).default('json'),
});

export const stdoutSinkDefinition = {
  type: 'stdout',
  settings,
  async create(s, ctx) {
    const { StdoutSink } = await import('./stdout-sink.ts');
    const pretty = s.format === 'pretty' || (s.format === 'auto' && ctx.stdout.isTTY === true);
    return new StdoutSink(ctx.stdout, pretty);
  },
} satisfies SinkDefinition<typeof settings>;
