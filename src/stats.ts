/** Counters the agent reports on shutdown and periodically; plain numbers, no hidden globals. */
export class Stats {
  private readonly counters = new Map<string, number>();

  add(name: string, by = 1): void {
    this.counters.set(name, (this.counters.get(name) ?? 0) + by);
  }

  get(name: string): number {
    return this.counters.get(name) ?? 0;
  }

  snapshot(): Readonly<Record<string, number>> {
    return Object.freeze(
      Object.fromEntries([...this.counters.entries()].sort(([a], [b]) => a.localeCompare(b))),
    );
  }
}
