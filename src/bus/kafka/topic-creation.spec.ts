import { describe, expect, it } from '@jest/globals';
import { UnavailableError } from '../../core/errors.js';
import { createMissingTopics, type TopicAdmin } from './topic-creation.js';

type Metadata = Awaited<ReturnType<TopicAdmin['fetchTopicMetadata']>>;

/** A broker's admin answers, scripted: what each look at the metadata returns or throws, in turn. */
function scriptedAdmin(existing: string[], looks: (Metadata | Error)[], offsetAnswers: (Error | null)[] = [null]) {
  const created: string[] = [];
  let fetches = 0;
  let offsetLooks = 0;
  const admin: TopicAdmin = {
    listTopics: async () => existing,
    createTopics: async ({ topics }) => {
      created.push(...topics.map((t) => t.topic));
      return true;
    },
    fetchTopicMetadata: async () => {
      const look = looks[Math.min(fetches++, looks.length - 1)];
      if (look instanceof Error) throw look;
      return look;
    },
    fetchTopicOffsets: async () => {
      const answer = offsetAnswers[Math.min(offsetLooks++, offsetAnswers.length - 1)];
      if (answer instanceof Error) throw answer;
      return [];
    },
  };
  return { admin, created, fetches: () => fetches, offsetLooks: () => offsetLooks };
}

function protocolError(type: string): Error {
  return Object.assign(new Error(`broker said ${type}`), { type });
}

const led = (name: string, leaders: number[]): Metadata => ({
  topics: [{ name, partitions: leaders.map((leader, partitionId) => ({ partitionId, leader })) }],
});

describe('creating the topics a role needs', () => {
  it('waits through "does not host this topic-partition" and leaderless partitions until every partition has a leader', async () => {
    const broker = scriptedAdmin(
      [],
      [protocolError('UNKNOWN_TOPIC_OR_PARTITION'), led('t', [1, -1, 1]), protocolError('LEADER_NOT_AVAILABLE'), led('t', [1, 1, 1])],
    );
    await createMissingTopics(broker.admin, [{ topic: 't', partitions: 3 }], { timeoutMs: 10_000, pauseMs: 1 });
    expect(broker.created).toEqual(['t']);
    expect(broker.fetches()).toBe(4);
  });

  it('waits, once the metadata names every leader, until the leaders serve their partitions', async () => {
    const gaveUp = Object.assign(new Error('KafkaJSNumberOfRetriesExceeded'), { cause: protocolError('NOT_LEADER_FOR_PARTITION') });
    const broker = scriptedAdmin([], [led('t', [1, 1])], [protocolError('NOT_LEADER_FOR_PARTITION'), gaveUp, null]);
    await createMissingTopics(broker.admin, [{ topic: 't', partitions: 2 }], { timeoutMs: 10_000, pauseMs: 1 });
    expect(broker.offsetLooks()).toBe(3);
  });

  it('leaves existing topics alone and creates only the missing ones', async () => {
    const broker = scriptedAdmin(['old'], [led('new', [1])]);
    await createMissingTopics(
      broker.admin,
      [
        { topic: 'old', partitions: 1 },
        { topic: 'new', partitions: 1 },
      ],
      { timeoutMs: 10_000, pauseMs: 1 },
    );
    expect(broker.created).toEqual(['new']);
  });

  it('does nothing when every topic exists', async () => {
    const broker = scriptedAdmin(['a'], []);
    await createMissingTopics(broker.admin, [{ topic: 'a', partitions: 1 }], { timeoutMs: 10_000 });
    expect(broker.created).toEqual([]);
    expect(broker.fetches()).toBe(0);
  });

  it('fails as unavailable, naming the topic and what it last saw, when a leader never comes', async () => {
    const broker = scriptedAdmin([], [protocolError('UNKNOWN_TOPIC_OR_PARTITION')]);
    const failure = createMissingTopics(broker.admin, [{ topic: 'stuck', partitions: 1 }], { timeoutMs: 50, pauseMs: 5 });
    await expect(failure).rejects.toBeInstanceOf(UnavailableError);
    await expect(failure).rejects.toThrow(/stuck.*UNKNOWN_TOPIC_OR_PARTITION/);
  });

  it('fails at once on any other answer', async () => {
    const broker = scriptedAdmin([], [protocolError('TOPIC_AUTHORIZATION_FAILED')]);
    await expect(createMissingTopics(broker.admin, [{ topic: 't', partitions: 1 }], { timeoutMs: 10_000, pauseMs: 1 })).rejects.toThrow(
      'TOPIC_AUTHORIZATION_FAILED',
    );
    expect(broker.fetches()).toBe(1);
  });
});
