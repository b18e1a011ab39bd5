/*
 * Redis Cluster hashing: CRC16-CCITT (XModem) of the key, or of its hash tag, modulo 16384. The store computes
 * slots itself to group a batch by slot and to refuse a request whose buckets would span slots before Redis
 * does (a multi-key script must stay within one slot).
 */

const TABLE = new Uint16Array(256);
for (let i = 0; i < 256; i++) {
  let c = i << 8;
  for (let j = 0; j < 8; j++) c = c & 0x8000 ? ((c << 1) ^ 0x1021) & 0xffff : (c << 1) & 0xffff;
  TABLE[i] = c;
}

const encoder = new TextEncoder();

function crc16(bytes: Uint8Array, from: number, to: number): number {
  let crc = 0;
  for (let i = from; i < to; i++) crc = ((crc << 8) & 0xffff) ^ TABLE[((crc >> 8) ^ bytes[i]) & 0xff];
  return crc;
}

/**
 * The Cluster slot of a key, as Redis computes it: only the part between the first `{` and the next `}` counts
 * when that part is non-empty.
 *
 * @param key - the full Redis key.
 * @returns the slot, 0 to 16383.
 */
export function clusterSlot(key: string): number {
  const bytes = encoder.encode(key);
  const open = bytes.indexOf(0x7b);
  if (open >= 0) {
    const close = bytes.indexOf(0x7d, open + 1);
    if (close > open + 1) return crc16(bytes, open + 1, close) & 16383;
  }
  return crc16(bytes, 0, bytes.length) & 16383;
}
