export interface UpstreamStats {
  requests: number;
  open: number;
  closed: number;
}
export function startUpstream(options?: {
  tokens?: number;
  interval?: number;
  overloadFirst?: boolean;
  /** Called with a line when a stream's connection closes before its end. @default none */
  log?: (line: string) => void;
}): Promise<{ url: string; stats: UpstreamStats; close(): Promise<void> }>;
