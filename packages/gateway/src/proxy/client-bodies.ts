/** The error of a request refused because its client already streams `upstream.maxBodiesPerClient` bodies. */
export class ClientBodiesError extends Error {
  readonly code = 'TOO_MANY_REQUEST_BODIES';
  /** @param maxBodiesPerClient - the cap the client is at. */
  constructor(readonly maxBodiesPerClient: number) {
    super(`the client already streams ${maxBodiesPerClient} request bodies upstream`);
  }
}

/**
 * The request bodies each client is streaming to the upstream (or waiting to), by client key. A body holds an
 * upstream connection for as long as it takes to arrive, which D-G47 lets run for hours at the minimum rate; a
 * cap per client keeps one client's slow but legal uploads from holding the whole pool. Only clients with a body
 * in flight have an entry, so the map is bounded by the requests in flight.
 */
export class ClientBodies {
  readonly #counts = new Map<string, number>();

  /** Clients with a body in flight. */
  get clients(): number {
    return this.#counts.size;
  }

  /**
   * Counts one more body of `client`, unless it has `cap` already.
   *
   * @param client - the client's key (its address as the `ip:` keys give it).
   * @param cap - `upstream.maxBodiesPerClient`, >= 1.
   * @returns whether the body was counted (then {@link give} it back once).
   */
  take(client: string, cap: number): boolean {
    const n = this.#counts.get(client) ?? 0;
    if (n >= cap) return false;
    this.#counts.set(client, n + 1);
    return true;
  }

  /** The body of `client` arrived whole or its request ended. */
  give(client: string): void {
    const n = this.#counts.get(client);
    if (n === undefined) return;
    if (n <= 1) this.#counts.delete(client);
    else this.#counts.set(client, n - 1);
  }
}
