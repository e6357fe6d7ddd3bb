import type { Hono } from 'hono';
export function createApp(options: {
  upstream: string;
  fetch?: (input: string, init: RequestInit) => Promise<Response>;
}): Hono;
export function listen(app: Hono, port?: number): Promise<{ url: string; close(): Promise<void> }>;
