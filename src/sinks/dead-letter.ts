import { mkdir, open } from 'node:fs/promises';
import { join } from 'node:path';
import type { SpooledRecord } from './spool.ts';

/**
 * Records a sink refused for good (a non-retryable 4xx, say), with the reason, one JSON line
 * each, fsync'd: a refused record is moved aside and counted, never silently dropped.
 */
export class DeadLetterFile {
  private readonly dir: string;

  constructor(stateDir: string) {
    this.dir = join(stateDir, 'dead-letter');
  }

  pathFor(sink: string): string {
    return join(this.dir, `${encodeURIComponent(sink)}.jsonl`);
  }

  async write(sink: string, reason: string, entries: readonly SpooledRecord[], at: string): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    const lines = entries.map((e) =>
      JSON.stringify({ failedAt: at, sink, reason, seq: e.seq, record: e.record }),
    );
    const fh = await open(this.pathFor(sink), 'a', 0o600);
    try {
      await fh.appendFile(`${lines.join('\n')}\n`);
      await fh.sync();
    } finally {
      await fh.close();
    }
  }
}
