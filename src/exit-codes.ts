/**
 * Exit codes of the public contract (docs/cli.md "Exit codes"). Errors that decide the
 * code the CLI ends with carry one of these as `exitCode`; library code names them here,
 * outside src/cli/, so nothing under src/ has to import the CLI.
 */
export const ExitCode = {
  reconciled: 0,
  failed: 1,
  unreconciled: 3,
  usage: 64,
  /** `sweeper apply`, `sweeper approve`: the file or id is not a plan this database made, or the file was altered (EX_DATAERR). */
  invalidPlan: 65,
  locked: 75,
  /** `sweeper approve`: the plan's author may not approve it; four eyes need a second person (EX_NOPERM). */
  notAllowed: 77,
} as const;

export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];
