/**
 * The default of `upstream.maxBodiesPerClient`: a quarter of `upstream.connections`, at least 1 (32 of the default
 * 128). A client streaming that many slow but legal bodies (D-G47 lets 10 MB at 500 bytes per second run for
 * hours) still leaves three quarters of the pool to everyone else, and 32 is far above the six connections a
 * browser opens to one host, so an office behind one NAT address is not refused for ordinary uploads. Never 0,
 * which would turn the cap off: a pool of one to three connections allows one body per client.
 *
 * @param connections - `upstream.connections`, an integer >= 1.
 * @returns the cap, an integer >= 1.
 */
export function defaultBodiesPerClient(connections: number): number {
  return Math.max(1, Math.floor(connections / 4));
}
