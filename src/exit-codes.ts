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
  locked: 75,
} as const;

export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];
