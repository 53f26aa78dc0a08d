import type { ScheduledEventRecord } from '../../transform/record.ts';
import { ok, type SendResult, type Sink } from '../types.ts';
import { formatTimelineLine } from './timeline.ts';

/** One JSON line per record (for jq), or a readable timeline on a terminal. */
export class StdoutSink implements Sink {
  private readonly out: NodeJS.WritableStream;
  private readonly pretty: boolean;

  constructor(out: NodeJS.WritableStream, pretty: boolean) {
    this.out = out;
    this.pretty = pretty;
  }

  async send(batch: readonly ScheduledEventRecord[]): Promise<SendResult> {
    const text = batch.map((r) => (this.pretty ? formatTimelineLine(r) : JSON.stringify(r))).join('\n');
    await new Promise<void>((resolve, reject) => {
      this.out.write(`${text}\n`, (err) => (err ? reject(err) : resolve()));
    });
    return ok;
  }

  async close(): Promise<void> {
    // stdout belongs to the process; nothing to release.
  }
}
