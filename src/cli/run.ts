import { CommanderError } from 'commander';
import { CliError, EXIT, type ExitCode } from './errors.js';
import { formatOf, type Io } from './output.js';
import { buildProgram, type CliContext } from './program.js';

/** Runs the command line and answers its exit code; what it prints goes to `io`. */
export async function run(argv: readonly string[], io: Io, env: NodeJS.ProcessEnv, signal?: AbortSignal): Promise<ExitCode> {
  const ctx: CliContext = { io, argv, env, signal, exitCode: EXIT.ok };
  try {
    await buildProgram(ctx).parseAsync(argv, { from: 'user' });
    return ctx.exitCode;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? EXIT.ok : EXIT.usage;
    const failure =
      error instanceof CliError ? error : new CliError(`unexpected error: ${(error as Error)?.stack ?? String(error)}`, EXIT.failure);
    if (formatOf(argv) === 'json') {
      const problem = failure.problem ?? { title: failure.message };
      io.err(`${JSON.stringify({ error: problem, exitCode: failure.exitCode })}\n`);
    } else {
      io.err(`flostra: ${failure.message}\n`);
      // The detail names the first issue; the others follow, one a line.
      for (const issue of failure.problem?.issues ?? []) {
        const line = `${issue.path || '(body)'}: ${issue.message}`;
        if (!failure.message.includes(line)) io.err(`  ${line}\n`);
      }
      if (failure.exitCode === EXIT.auth && failure.problem?.status === 401)
        io.err('  (set a token with --token, FLOSTRA_TOKEN or "flostra config set token <token>")\n');
    }
    return failure.exitCode;
  }
}
