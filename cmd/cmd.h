/* SPDX-License-Identifier: MIT */
#pragma once
/*
 * Subcommands.  Each returns the process exit code:
 *   0 success, 1 runtime failure, 2 usage error, 3 configuration error.
 */
int cmd_serve(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_ds(int argc, char **argv);
int cmd_keygen(int argc, char **argv);
int cmd_explain(int argc, char **argv);
int cmd_reload(int argc, char **argv);
int cmd_ctl(int argc, char **argv);

enum { EXIT_OK = 0, EXIT_RUNTIME = 1, EXIT_USAGE = 2, EXIT_CONFIG = 3 };
