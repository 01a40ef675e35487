/** Headers that describe one hop, not the message: the floor proxies (Node and Deno) never forward them. */
export const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'host',
]);
