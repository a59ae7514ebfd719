// Requests of one engine run one after another, in the order they started (a stream holds
// its turn from its first chunk to its last, so two streams never interleave tokens).

export class RequestQueue {
  constructor() {
    this.tail = Promise.resolve();
  }

  // Resolves, when this request's turn comes, to the function that ends the turn.
  async acquire() {
    let release;
    const turn = new Promise((resolve) => (release = resolve));
    const before = this.tail;
    this.tail = before.then(() => turn);
    await before;
    return release;
  }
}
