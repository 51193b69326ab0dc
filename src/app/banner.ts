import type { DevTokens } from '../auth/tokens-file.schema.js';
import { DEMO_WORKFLOW_NAME } from './demo-workflow.js';

/** What a person sees after `npm start`: where it listens, the dev tokens, and a first command. */
export function printBanner(options: { url: string; devTokens: DevTokens | null; dataDir: string; embedded: boolean }): void {
  const { url, devTokens } = options;
  const lines = [``, `Flostra is listening on ${url}`];
  if (options.embedded) lines.push(`Embedded mode: PGlite and in-process bus, data in ${options.dataDir}`);
  if (devTokens) {
    lines.push(
      `Dev admin token  (admin of workspace "${devTokens.workspace}", system-admin): ${devTokens.admin}`,
      `Dev worker token (worker):                                          ${devTokens.worker}`,
      ``,
      `Start an execution of the bundled "${DEMO_WORKFLOW_NAME}" workflow:`,
      `  curl -sS -X POST ${url}/v1/workspaces/${devTokens.workspace}/workflows/${DEMO_WORKFLOW_NAME}/executions \\`,
      `    -H 'Authorization: Bearer ${devTokens.admin}' -H 'Content-Type: application/json' \\`,
      `    -H 'Idempotency-Key: first-run' -d '{"input":{"name":"world"}}'`,
      `Then look at it:`,
      `  curl -sS ${url}/v1/executions/<executionId> -H 'Authorization: Bearer ${devTokens.admin}'`,
    );
  }
  lines.push(``);
  process.stdout.write(lines.join('\n') + '\n');
}
