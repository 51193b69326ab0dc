import { UnavailableError } from '../../core/errors.js';

/** What creating topics needs of kafkajs' admin client. */
export interface TopicAdmin {
  listTopics(): Promise<string[]>;
  createTopics(options: { waitForLeaders: boolean; topics: { topic: string; numPartitions: number }[] }): Promise<boolean>;
  fetchTopicMetadata(options: {
    topics: string[];
  }): Promise<{ topics: { name: string; partitions: { partitionId: number; leader: number }[] }[] }>;
  /** ListOffsets: answered by each partition's leader only once it serves the partition. */
  fetchTopicOffsets(topic: string): Promise<unknown[]>;
}

export interface TopicCreationOptions {
  /** How long the new topics may take to have a leader for every partition. */
  timeoutMs: number;
  /** Pause between two looks at their metadata. Default 50 ms. */
  pauseMs?: number;
}

/**
 * What the broker answers about a topic it has just created, until its partitions have leaders
 * that serve them. kafkajs' own wait (`waitForLeaders`) retries only the second: on a KRaft
 * broker the first also comes, and failed startups on a fresh broker with "This server does not
 * host this topic-partition". The third comes after the metadata already names the leader.
 */
const NOT_READY_YET = new Set(['UNKNOWN_TOPIC_OR_PARTITION', 'LEADER_NOT_AVAILABLE', 'NOT_LEADER_FOR_PARTITION']);

/** A not-ready answer, or kafkajs giving up its own retries of one. */
function stillSettling(error: unknown): boolean {
  // kafkajs's fetchTopicOffsets throws a TypeError when the broker's ListOffsets answer does not
  // name a topic it has just created yet: the topic is not served yet, as with the codes above.
  if (error instanceof TypeError && error.message.includes("'partitions'")) return true;
  const { type, cause } = error as { type?: unknown; cause?: unknown };
  return NOT_READY_YET.has(type as string) || (cause !== undefined && stillSettling(cause));
}

/**
 * Creates the topics that do not exist yet and resolves once every partition of each has a
 * leader that serves it, so the first publish or subscription finds them. A topic created
 * concurrently by another process counts as created.
 *
 * The metadata names a partition's leader a moment before that broker serves it: a publish in
 * that moment is refused for some partitions, and kafkajs sends the whole request again, so
 * the messages the other partitions had accepted were stored twice (75 to 175 extra of 200 in
 * a loop on the test broker). Leaders that answer ListOffsets for every partition close it.
 */
export async function createMissingTopics(
  admin: TopicAdmin,
  topics: { topic: string; partitions: number }[],
  options: TopicCreationOptions,
): Promise<void> {
  const existing = new Set(await admin.listTopics());
  const missing = topics.filter(({ topic }) => !existing.has(topic));
  if (missing.length === 0) return;
  // Answers false when a concurrent creator won the race, which is fine.
  await admin.createTopics({
    waitForLeaders: false,
    topics: missing.map(({ topic, partitions }) => ({ topic, numPartitions: partitions })),
  });
  const names = missing.map(({ topic }) => topic);
  const deadline = performance.now() + options.timeoutMs;
  let lastSeen = 'no answer yet';
  for (;;) {
    try {
      const { topics: described } = await admin.fetchTopicMetadata({ topics: names });
      const leaderless = names.filter((name) => {
        const partitions = described.find((t) => t.name === name)?.partitions ?? [];
        return partitions.length === 0 || partitions.some((p) => p.leader < 0);
      });
      if (leaderless.length === 0) {
        for (const name of names) await admin.fetchTopicOffsets(name);
        return;
      }
      lastSeen = `no leader yet for ${leaderless.join(', ')}`;
    } catch (error) {
      if (!stillSettling(error)) throw error;
      lastSeen = String(error);
    }
    if (performance.now() >= deadline) {
      throw new UnavailableError(`topics ${names.join(', ')} were created but not ready within ${options.timeoutMs} ms (${lastSeen})`);
    }
    await new Promise((resolve) => setTimeout(resolve, options.pauseMs ?? 50));
  }
}
