/**
 * Error text from a Redis client, made safe for an event: no credentials of a
 * `redis://user:password@host` URL, no secret the caller named, bounded length.
 */
import { REDACTED } from '../internal/redact.js';

const USERINFO = /([a-z][a-z0-9+.-]*:\/\/)[^\s/@]*@/gi;
const MAX_LENGTH = 300;

/** Replaces every occurrence of each secret (4 characters or more) by `***`. */
export function scrub(text: string, secrets: readonly string[]): string {
  let out = text.replace(USERINFO, `$1${REDACTED}@`);
  for (const secret of secrets) {
    if (secret.length >= 4) out = out.split(secret).join(REDACTED);
  }
  return out;
}

/** `redis: <code> <message>` with credentials removed. */
export function redactError(error: unknown, secrets: readonly string[]): string {
  let text: string;
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    const message = error.message || error.name;
    text = typeof code === 'string' && !message.includes(code) ? `${code} ${message}` : message;
  } else {
    text = String(error);
  }
  text = scrub(text, secrets);
  if (text.length > MAX_LENGTH) text = `${text.slice(0, MAX_LENGTH)}…`;
  return `redis: ${text}`;
}
