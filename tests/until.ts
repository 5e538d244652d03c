// Waits until `done()` holds, polling every 10 ms, however slow the machine (at most `limitMs`).
// The caller asserts what it waited for.
export const until = async (done: () => boolean, limitMs = 10_000) => {
  for (let waited = 0; !done() && waited < limitMs; waited += 10) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
};
