/** Capped exponential backoff with jitter, shared by the IMDS poller and the sink dispatcher. */
export interface BackoffPolicy {
  readonly initialDelayMs: number;
  readonly maxDelayMs: number;
}

/**
 * Delay before retry number `attempt` (0-based). "Equal jitter": half the exponential step is
 * kept so retries never collapse to zero, half is random so a fleet does not retry in lockstep.
 */
export function backoffDelayMs(
  policy: BackoffPolicy,
  attempt: number,
  random: () => number = Math.random,
): number {
  const exp = Math.min(policy.maxDelayMs, policy.initialDelayMs * 2 ** Math.min(attempt, 30));
  const half = exp / 2;
  return Math.round(half + random() * half);
}

/** Retry-After is either delta-seconds or an HTTP-date; anything else is ignored. */
export function parseRetryAfterMs(value: string | string[] | undefined, nowMs: number): number | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  if (v === undefined || v.trim() === '') return undefined;
  const trimmed = v.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * 1000);
  const at = Date.parse(trimmed);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - nowMs);
}
