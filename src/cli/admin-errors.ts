/** The admin CLI's error for what the operator did or must do: its message is printed alone, and the CLI exits 1. */
export class CliError extends Error {}
