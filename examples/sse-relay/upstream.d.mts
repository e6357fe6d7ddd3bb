export interface UpstreamStats {
  requests: number;
  open: number;
  closed: number;
}
export function startUpstream(options?: {
  tokens?: number;
  interval?: number;
  overloadFirst?: boolean;
}): Promise<{ url: string; stats: UpstreamStats; close(): Promise<void> }>;
