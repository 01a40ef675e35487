/** Shared by the in-process benchmarks: one chat completion, answered with its status (0: no answer). */
export const chatBody = JSON.stringify({
  model: 'sim-model',
  messages: [{ role: 'user', content: 'hi' }],
  max_tokens: 2,
});

export async function postChat(routerUrl: string, body = chatBody): Promise<number> {
  try {
    const res = await fetch(`${routerUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    await res.arrayBuffer();
    return res.status;
  } catch {
    return 0;
  }
}
