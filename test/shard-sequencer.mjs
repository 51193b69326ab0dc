/**
 * How `npm test` splits the suites between its jest processes (scripts/test-shards.mjs runs one
 * per shard with `--shard=i/n`). Jest's own split cuts the suites, sorted by a hash of their
 * paths, into runs of equal length: one shard can get most of the minute-long e2e suites while
 * another gets unit specs of a few milliseconds. This one balances the expected time instead.
 *
 * The estimate is the suite's tier (its file suffix) alone: the e2e and integration suites take
 * tens of seconds, a unit spec well under one. Durations jest cached from earlier runs are not
 * used on purpose: the shards are chosen in separate processes, and each must make the same
 * choice from the same input, which a cache one of them may already have rewritten is not.
 * Within a tier the suites go, in the order of a hash of their paths, each to the shard with the
 * least expected time so far; ties go to the lower shard. Within a shard jest's own order applies
 * (failed first, then longest first).
 */
import { createHash } from 'node:crypto';
import { relative } from 'node:path';
import sequencerModule from '@jest/test-sequencer';

// A CommonJS module with an ES default export: Node hands the whole exports object over.
const Sequencer = sequencerModule.default ?? sequencerModule;

/** Typical seconds per suite, by tier (from the CI runs: e2e about 18, integration about 10). */
function expectedSeconds(path) {
  if (path.endsWith('.e2e.spec.ts')) return 18;
  if (path.endsWith('.int.spec.ts')) return 10;
  if (path.endsWith('.chaos.spec.ts')) return 150;
  return 0.5;
}

export default class ShardSequencer extends Sequencer {
  shard(tests, { shardIndex, shardCount }) {
    const keyed = tests.map((test) => {
      const path = relative(test.context.config.rootDir, test.path).split('\\').join('/');
      return { test, cost: expectedSeconds(path), hash: createHash('sha1').update(path).digest('hex') };
    });
    keyed.sort((a, b) => b.cost - a.cost || (a.hash < b.hash ? -1 : a.hash > b.hash ? 1 : 0));
    const load = new Array(shardCount).fill(0);
    const chosen = [];
    for (const entry of keyed) {
      let target = 0;
      for (let shard = 1; shard < shardCount; shard += 1) if (load[shard] < load[target]) target = shard;
      load[target] += entry.cost;
      if (target === shardIndex - 1) chosen.push(entry.test);
    }
    return chosen;
  }
}
