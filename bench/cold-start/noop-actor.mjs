// An actor module in plain JavaScript for the cold-start bench: host threads
// import it from the built runtime, with no TypeScript loader anywhere.
import { defineActor } from '../../packages/actors/dist/index.js';

export default defineActor(import.meta.url, {
  init: () => 0,
  handleCall: (msg, state) => ({ reply: msg, state }),
});
