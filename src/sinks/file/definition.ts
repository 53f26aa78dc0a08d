import * as v from 'valibot';
import type { SinkDefinition } from '../types.ts';

const settings = {
  type: v.literal('file'),
  path: v.pipe(v.string(), v.minLength(1, 'expected a file path')),
  /** The current file is rotated to <path>.1 once it would exceed this. */
  rotateBytes: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1024)), 10 * 1024 * 1024),
  /** How many rotated files are kept beside the current one. */
  keepFiles: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(100)), 5),
};

export const fileSinkDefinition: SinkDefinition<typeof settings> = {
  type: 'file',
  settings,
  async create(s, ctx) {
    const { FileSink } = await import('./file-sink.ts');
    return FileSink.open({ path: s.path, rotateBytes: s.rotateBytes, keepFiles: s.keepFiles, log: ctx.log });
  },
};
