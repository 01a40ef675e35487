/**
 * The client that uploads bodies larger than --max-payload-size to a pass-through route
 * (/v1/audio/transcriptions, streamed with no content-length), on its own connections, while the
 * legitimate client runs.
 */
import { Agent, fetch as undiciFetch } from 'undici';
import { causeOf } from './resilience-client.ts';

/**
 * One upload of `bytes` bytes with no content-length (chunked), as a multipart client would stream
 * it, on the uploading client's own connections (`agent`), not the legitimate client's.
 */
async function upload(
  agent: Agent,
  routerUrl: string,
  id: string,
  bytes: number,
  timeoutMs: number,
): Promise<string> {
  const chunk = new Uint8Array(64 * 1024).fill(0x61);
  async function* body() {
    for (let sent = 0; sent < bytes; sent += chunk.byteLength) yield chunk;
  }
  const signal = AbortSignal.timeout(timeoutMs);
  try {
    const res = await undiciFetch(`${routerUrl}/v1/audio/transcriptions`, {
      method: 'POST',
      headers: { 'content-type': 'multipart/form-data; boundary=bench', 'x-request-id': id },
      body: body(),
      duplex: 'half',
      signal,
      dispatcher: agent,
    });
    await res.arrayBuffer().catch(() => {});
    return `${res.status}${res.headers.has('x-router-error-code') ? ` ${res.headers.get('x-router-error-code')}` : ''}`;
  } catch (err) {
    return signal.aborted ? 'timeout' : `no response (${causeOf(err)})`;
  }
}

/**
 * The misbehaving client: `s.uploads` uploads of --max-payload-size + 256 KiB, `s.uploadConcurrency`
 * at a time. Answers each upload's outcome ("502 upstream_unreachable", "413 payload_too_large").
 */
export async function oversizedUploads(
  s: { uploads: number; uploadConcurrency: number; uploadLimitBytes: number; timeoutMs: number },
  routerUrl: string,
  prefix: string,
): Promise<string[]> {
  const outcomes: string[] = [];
  const agent = new Agent();
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < s.uploads; i = next++) {
      const bytes = s.uploadLimitBytes + 256 * 1024;
      outcomes.push(await upload(agent, routerUrl, `${prefix}${i}`, bytes, s.timeoutMs));
    }
  };
  try {
    await Promise.all(Array.from({ length: s.uploadConcurrency }, worker));
  } finally {
    await agent.destroy();
  }
  return outcomes;
}
