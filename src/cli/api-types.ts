/**
 * The shapes of the API answers the CLI reads (docs/api-reference.md), written down here so that
 * the CLI imports nothing of the server. Only the members the CLI uses are typed.
 */

export type ExecutionStatus = 'queued' | 'running' | 'awaiting_approval' | 'succeeded' | 'failed' | 'timed_out' | 'cancelled';

export const FINAL_STATUSES: readonly ExecutionStatus[] = ['succeeded', 'failed', 'timed_out', 'cancelled'];

export interface ErrorInfo {
  code: string;
  message: string;
  retryable?: boolean;
}

export interface PublishedWorkflow {
  workflowId: string;
  name: string;
  revision: number;
  digest: string;
  position: string;
}

export interface WorkflowNode {
  id: string;
  type: string;
  config?: unknown;
  trigger?: string;
}

export interface WorkflowRevision {
  workflowId: string;
  workspaceId: string;
  name: string;
  revision: number;
  digest: string;
  graph: { nodes: WorkflowNode[]; edges: { from: string; to: string }[] };
  publishedBy: string;
  publishedAt: string;
}

export interface StartedExecution {
  executionId: string;
  workflowRevision: number;
  status: ExecutionStatus;
  position: string;
}

export interface ExecutionSummary {
  executionId: string;
  workspaceId: string;
  workflow: { name: string; revision: number };
  status: ExecutionStatus;
  waitingFor: string | null;
  cancelRequested: boolean;
  attemptCount: number;
  startedAt: string;
  updatedAt: string;
  endedAt: string | null;
}

export interface ExecutionList {
  executions: ExecutionSummary[];
  nextCursor: string | null;
}

/** `GET /v1/workspaces/:ws/workflows`: every workflow of the workspace with its latest revision. */
export interface WorkflowList {
  items: { name: string; revision: number; digest: string; publishedBy: string; publishedAt: string; position: string }[];
}

export interface ExecutionView extends Omit<ExecutionSummary, 'workflow' | 'attemptCount'> {
  workflow: { workflowId: string; name: string; revision: number; digest: string };
  input: unknown;
  output: unknown;
  error: ErrorInfo | null;
  pendingApproval: { nodeId: string; action: unknown; actionDigest: string } | null;
  attempts: {
    attemptId: string;
    attemptNumber: number;
    reason: string;
    status: string;
    workerId: string | null;
    error: ErrorInfo | null;
  }[];
  nodes: { nodeId: string; status: string; output: unknown; error: ErrorInfo | null; startedAt: string | null; endedAt: string | null }[];
  /** The execution whose `subworkflow` node started this one (absent from servers before sub-workflows). */
  parent?: { executionId: string; nodeId: string; depth: number } | null;
  children?: { executionId: string; nodeId: string; workflow: string; status: string }[];
  position: string;
}

/** One event of an execution, as `/history` and the live streams show it. */
export interface ExecutionEvent {
  eventId: string;
  type: string;
  position: string;
  revision: number;
  recordedAt: string;
  data: Record<string, unknown>;
  /** Live events only. */
  executionId?: string;
  workspaceId?: string;
}

export interface ExecutionHistory {
  events: ExecutionEvent[];
  nextCursor: string | null;
}
