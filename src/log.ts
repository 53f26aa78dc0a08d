import pino, { type Logger } from 'pino';

export type { Logger };

export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * Logs go to stderr so stdout stays a clean JSON-lines stream for the stdout sink and `jq`.
 * Secrets never reach a log line: known secret-bearing keys are redacted at the logger.
 */
export function createLogger(level: LogLevel, destinationFd = 2): Logger {
  return pino(
    {
      level,
      base: { agent: 'scheduled-events-forwarder' },
      redact: {
        paths: [
          '*.access_token',
          '*.accessToken',
          '*.token',
          '*.connectionString',
          '*.clientSecret',
          '*.authorization',
          '*.Authorization',
          'headers.authorization',
        ],
        censor: '[redacted]',
      },
    },
    pino.destination({ fd: destinationFd, sync: true }),
  );
}

/** A logger that drops everything; for tests and library use. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
