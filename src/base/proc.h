/* proc.h — whether a process runs, from /proc. */
#ifndef KRMPOD_PROC_H
#define KRMPOD_PROC_H

#include <stdbool.h>
#include <sys/types.h>

/* Whether pid names a running process: it exists and is not a zombie (kill(pid, 0) says
 * yes to a zombie, whose pid stays reserved until its parent reaps it). Only a liveness
 * test when the pid cannot have been reused: generate never reaps its janitor before the
 * render's end (kustomize_run.h), so while the shims run, the janitor's pid is the
 * janitor's, running or a zombie. */
bool proc_running(pid_t pid);

#endif
